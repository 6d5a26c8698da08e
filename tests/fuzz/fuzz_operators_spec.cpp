// libFuzzer target: the loader of operators.yaml (spec::parseOperatorsSpec).
#include "generator/spec/spec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  return accgen::fuzz::expectRefusalsOnly([&] {
    accgen::DiagnosticEngine diags;
    (void)accgen::spec::parseOperatorsSpec(accgen::fuzz::textOf(data, size),
                                           "specs/operators.yaml", diags);
  });
}
