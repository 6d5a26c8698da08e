// The runtime tuning in force (Note [Runtime tuning] in Tuning.h).
#include "accgen/runtime/Tuning.h"

#include <c10/util/Exception.h>

#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

bool isPowerOfTwo(std::size_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

}  // namespace

void checkTuning(const RuntimeTuning& tuning) {
  const auto& device = tuning.device_allocator;
  TORCH_CHECK(isPowerOfTwo(device.round_bytes),
              "tuneRuntime: device_allocator.round_bytes must be a power of "
              "two, got ",
              device.round_bytes);
  TORCH_CHECK(device.reuse_ratio >= 1,
              "tuneRuntime: device_allocator.reuse_ratio must be at least 1");
  TORCH_CHECK(isPowerOfTwo(tuning.host_allocator.round_bytes),
              "tuneRuntime: host_allocator.round_bytes must be a power of "
              "two, got ",
              tuning.host_allocator.round_bytes);
  TORCH_CHECK(tuning.streams.per_pool >= 1 && tuning.streams.per_pool <= 32,
              "tuneRuntime: streams.per_pool must be within [1, 32], got ",
              tuning.streams.per_pool);
}

const RuntimeTuning& tuning() {
  static const RuntimeTuning value = [] {
    RuntimeTuning tuned;
    tuneRuntime(tuned);
    checkTuning(tuned);
    return tuned;
  }();
  return value;
}

accDeviceProp deviceProperties(c10::DeviceIndex device) {
  device = resolveDevice(device);
  accDeviceProp prop{};
  ACCGEN_CHECK(accGetDeviceProperties(&prop, device));
  if (tuning().device_properties) {
    tuning().device_properties(device, prop);
  }
  return prop;
}

}  // namespace accgen::runtime
