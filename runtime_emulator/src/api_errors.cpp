// accGetErrorString / accGetErrorName: static strings for every code, and a
// fixed answer for values outside the enum (never NULL). They work before,
// during and after the runtime's life, and in forked children.
#include "accgen/driver.h"

extern "C" {

const char* accGetErrorString(accError_t error) {
  switch (error) {
    case accSuccess:
      return "no error";
    case accErrorInvalidValue:
      return "invalid argument: a value is out of range, NULL, or names "
             "memory of the wrong kind";
    case accErrorInvalidDevice:
      return "invalid device ordinal";
    case accErrorMemoryAllocation:
      return "out of memory";
    case accErrorNotReady:
      return "device not ready: the queried work has not completed yet";
    case accErrorInvalidHandle:
      return "invalid resource handle: unknown stream, event or pointer";
    case accErrorLaunchFailure:
      return "a launched kernel reported an error";
    case accErrorNotInitialized:
      return "driver not initialized: accInit after first use, or use in a "
             "process forked after the driver started";
    case accErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case accErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case accErrorStreamCaptureUnjoined:
      return "capture ended while a stream that joined it had not joined "
             "back";
    case accErrorNotSupported:
      return "operation not supported by this driver";
  }
  return "unrecognized error code";
}

const char* accGetErrorName(accError_t error) {
  switch (error) {
    case accSuccess:
      return "accSuccess";
    case accErrorInvalidValue:
      return "accErrorInvalidValue";
    case accErrorInvalidDevice:
      return "accErrorInvalidDevice";
    case accErrorMemoryAllocation:
      return "accErrorMemoryAllocation";
    case accErrorNotReady:
      return "accErrorNotReady";
    case accErrorInvalidHandle:
      return "accErrorInvalidHandle";
    case accErrorLaunchFailure:
      return "accErrorLaunchFailure";
    case accErrorNotInitialized:
      return "accErrorNotInitialized";
    case accErrorStreamCaptureUnsupported:
      return "accErrorStreamCaptureUnsupported";
    case accErrorStreamCaptureInvalidated:
      return "accErrorStreamCaptureInvalidated";
    case accErrorStreamCaptureUnjoined:
      return "accErrorStreamCaptureUnjoined";
    case accErrorNotSupported:
      return "accErrorNotSupported";
  }
  return "accErrorUnrecognized";
}

}  // extern "C"
