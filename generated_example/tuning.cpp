// The runtime tuning of accel. This file is yours: accgen created it once
// and never touches it again.
//
// accgen's runtime calls tuneRuntime() once, on its first use, with its
// defaults in `tuning`; change what your hardware needs (Note [Runtime
// tuning] in accgen/runtime/Tuning.h lists every field and its range).
//
// The example names its devices after their index and serves high-priority
// work from a larger stream pool; tests/python/test_tuning.py checks both.
#include <cstdio>

#include <accgen/runtime/Tuning.h>

// --8<-- [start:tune-runtime]
void accgen::runtime::tuneRuntime(RuntimeTuning& tuning) {
  tuning.streams.per_pool = 8;
  tuning.device_properties = [](c10::DeviceIndex device, accDeviceProp& prop) {
    std::snprintf(prop.name, sizeof(prop.name), "accel emulated device %d",
                  static_cast<int>(device));
  };
}
// --8<-- [end:tune-runtime]
