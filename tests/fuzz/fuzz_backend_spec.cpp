// libFuzzer target: the loader of backend.yaml (spec::parseBackendSpec).
#include "generator/spec/spec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  return accgen::fuzz::expectRefusalsOnly([&] {
    accgen::DiagnosticEngine diags;
    (void)accgen::spec::parseBackendSpec(accgen::fuzz::textOf(data, size),
                                         "specs/backend.yaml", diags);
  });
}
