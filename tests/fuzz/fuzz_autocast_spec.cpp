// libFuzzer target: the loader of autocast.yaml (spec::parseAutocastSpec).
#include "generator/spec/spec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  return accgen::fuzz::expectRefusalsOnly([&] {
    accgen::DiagnosticEngine diags;
    (void)accgen::spec::parseAutocastSpec(accgen::fuzz::textOf(data, size),
                                          "specs/autocast.yaml", diags);
  });
}
