// What a generated backend adds to the runtime, written by hand for the
// runtime's own tests: a few emulated operators, the CPU fallback for the
// rest, and a tuning that differs from the defaults in every field the
// tests can observe.
#include <cstdio>

#include <accgen/runtime/Emulate.h>
#include <accgen/runtime/Registration.h>
#include <accgen/runtime/Tuning.h>

namespace {

using namespace ::accgen::runtime;

ACCGEN_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mul.Tensor", emulate::direct());
  m.impl("mul.out", emulate::direct());
  m.impl("fill_.Scalar", emulate::direct());
}

ACCGEN_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpuFallback>());
}

}  // namespace

void accgen::runtime::tuneRuntime(RuntimeTuning& tuning) {
  tuning.streams.per_pool = 2;
  tuning.device_allocator.round_bytes = 4096;
  tuning.device_properties = [](c10::DeviceIndex device, accDeviceProp& prop) {
    std::snprintf(prop.name, sizeof(prop.name), "rtest device %d",
                  static_cast<int>(device));
  };
}
