// The runtime tuning of accel. This file is yours: accgen created it once
// and never touches it again.
//
// accgen's runtime calls tuneRuntime() once, on its first use, with its
// defaults in `tuning`; change what your hardware needs (Note [Runtime
// tuning] in accgen/runtime/Tuning.h lists every field and its range):
//
//   tuning.device_allocator.round_bytes = 4096;     // allocation granule
//   tuning.device_allocator.caching = false;        // no caching allocator
//   tuning.streams.per_pool = 8;                     // streams per priority
//   tuning.device_properties = [](c10::DeviceIndex, accDeviceProp& prop) {
//     std::snprintf(prop.name, sizeof(prop.name), "My Accelerator");
//   };
#include <accgen/runtime/Tuning.h>

void accgen::runtime::tuneRuntime(RuntimeTuning& /*tuning*/) {
  // The defaults serve the emulator.
}
