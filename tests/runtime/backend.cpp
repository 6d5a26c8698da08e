// What a generated backend adds to the runtime, written by hand for the
// runtime's own tests: a few emulated operators, the CPU fallback for the
// rest, and a tuning that differs from the defaults in every field the
// tests can observe. RTEST_NO_CACHING=1 turns the caching allocator off
// (the ctest entry runtime_tests_no_caching).
#include <cstdio>
#include <cstdlib>
#include <string>

#include <accgen/runtime/Emulate.h>
#include <accgen/runtime/Registration.h>
#include <accgen/runtime/Tuning.h>

namespace {

using namespace ::accgen::runtime;

ACCGEN_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mul.Tensor", emulate::boxedKernel());
  m.impl("mul.out", emulate::boxedKernel());
  m.impl("fill_.Scalar", emulate::boxedKernel());
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
  const char* no_caching = std::getenv("RTEST_NO_CACHING");
  if (no_caching != nullptr && std::string(no_caching) == "1") {
    tuning.device_allocator.caching = false;
  }
}
