// Driver start-up, device selection and the translation of driver error
// codes into c10 exceptions. Everything else in the runtime reaches the
// driver through the helpers defined here and ACCGEN_CHECK.
#include "accgen/runtime/Driver.h"

#include <cstring>
#include <string>

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include "Internal.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace detail {

const char* shortSourcePath(const char* file) {
  // The last match wins: the project itself may live below a directory of
  // either name.
  const char* short_path = file;
  for (const char* marker : {"/csrc/", "/runtime/"}) {
    for (const char* found = std::strstr(short_path, marker); found != nullptr;
         found = std::strstr(found + 1, marker)) {
      short_path = found + 1;
    }
  }
  return short_path;
}

void throwDriverError(accError_t error, const char* call, const char* file,
                      int line, const char* function) {
  std::string message =
      c10::str(kDeviceName, " driver call ", call, " failed with ",
               accGetErrorName(error), ": ", accGetErrorString(error), " (",
               shortSourcePath(file), ":", line, ")");
  if (error == accErrorLaunchFailure) {
    // Note [Queued operators]: what the failed kernels raised.
    if (const std::string queued = takeDeferredErrors(); !queued.empty()) {
      message += c10::str("\nWork queued on the ", kDeviceName,
                          " earlier failed:", queued);
    }
  }
  const c10::SourceLocation location{function, file,
                                     static_cast<std::uint32_t>(line)};
  if (error == accErrorMemoryAllocation) {
    throw c10::OutOfMemoryError(location, std::move(message));
  }
  throw c10::Error(location, std::move(message));
}

}  // namespace detail

void initDriver() noexcept {
  // A function-local static: after the first call, one load of its guard
  // (std::call_once reads several thread-locals on every call, and this
  // runs several times per operator).
  static const bool initialized = [] {
    accInitParams params{};
    params.deviceCount = kDefaultDeviceCount;
    params.memoryPerDevice = kDefaultMemoryBytes;
    // accErrorNotInitialized means someone used the driver first; it keeps
    // the settings it started with, which is all we could do anyway.
    (void)accInit(&params);
    return true;
  }();
  (void)initialized;
}

c10::DeviceIndex deviceCount() noexcept {
  // The count cannot change once the driver is up, and c10 asks for it on
  // every guard construction: ask the driver once.
  static const c10::DeviceIndex count = [] {
    initDriver();
    int driver_count = 0;
    if (accGetDeviceCount(&driver_count) != accSuccess || driver_count < 0) {
      return c10::DeviceIndex{0};
    }
    return static_cast<c10::DeviceIndex>(driver_count);
  }();
  return count;
}

void checkDeviceIndex(c10::DeviceIndex device) {
  const c10::DeviceIndex count = deviceCount();
  TORCH_CHECK(count > 0, kDeviceName, ": no devices are available");
  TORCH_CHECK(device >= 0 && device < count, "Invalid device index ",
              static_cast<int>(device), " for ", kDeviceName, ": ",
              static_cast<int>(count),
              " device(s) available, valid indices are 0..",
              static_cast<int>(count) - 1);
}

c10::DeviceIndex currentDevice() {
  initDriver();
  int device = 0;
  ACCGEN_CHECK(accGetDevice(&device));
  return static_cast<c10::DeviceIndex>(device);
}

void setDevice(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  ACCGEN_CHECK(accSetDevice(device));
}

c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) {
  const c10::DeviceIndex previous = currentDevice();
  if (device >= 0 && device != previous) {
    setDevice(device);
  }
  return previous;
}

c10::DeviceIndex resolveDevice(c10::DeviceIndex device) {
  if (device < 0) {
    return currentDevice();
  }
  checkDeviceIndex(device);
  return device;
}

}  // namespace accgen::runtime
