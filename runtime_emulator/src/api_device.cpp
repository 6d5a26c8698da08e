// Entry points for initialisation and devices: accInit, the device count,
// the per-thread current device, properties and device-wide synchronization.
#include <cstring>
#include <thread>

#include "runtime.h"

using accgen::emulator::guarded;
using accgen::emulator::kMaxDeviceCount;
using accgen::emulator::Runtime;

extern "C" {

accError_t accInit(const accInitParams* params) {
  if (accgen::emulator::inForkedChild()) {
    return accErrorNotInitialized;
  }
  if (params == nullptr || params->deviceCount < 0 ||
      params->deviceCount > kMaxDeviceCount) {
    return accErrorInvalidValue;
  }
  try {
    return accgen::emulator::initializeRuntime(*params);
  } catch (...) {
    return accErrorMemoryAllocation;
  }
}

accError_t accGetDeviceCount(int* count) {
  if (count == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    *count = rt.deviceCount();
    return accSuccess;
  });
}

accError_t accGetDevice(int* device) {
  if (device == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime&) {
    *device = Runtime::currentDevice();
    return accSuccess;
  });
}

accError_t accSetDevice(int device) {
  return guarded([&](Runtime& rt) {
    if (!rt.validDevice(device)) {
      return accErrorInvalidDevice;
    }
    Runtime::setCurrentDevice(device);
    return accSuccess;
  });
}

accError_t accGetDeviceProperties(accDeviceProp* prop, int device) {
  if (prop == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    if (!rt.validDevice(device)) {
      return accErrorInvalidDevice;
    }
    std::memset(prop, 0, sizeof(*prop));
    std::strncpy(prop->name, "accgen emulated device", sizeof(prop->name) - 1);
    prop->totalGlobalMem = rt.device(device).capacity;
    const unsigned threads = std::thread::hardware_concurrency();
    prop->multiProcessorCount = threads > 0 ? static_cast<int>(threads) : 1;
    prop->major = 1;
    prop->minor = 0;
    return accSuccess;
  });
}

accError_t accDeviceSynchronize(void) {
  return guarded([&](Runtime& rt) {
    const int device = Runtime::currentDevice();
    if (accError_t e = rt.refuseWhileCapturing(device); e != accSuccess) {
      return e;
    }
    rt.drainDevice(device);
    // Report every stream's sticky error once; the first one found wins.
    accError_t result = accSuccess;
    for (const auto& stream : rt.streamsOf(device)) {
      const accError_t error = stream->takeError();
      if (result == accSuccess) {
        result = error;
      }
    }
    return result;
  });
}

}  // extern "C"
