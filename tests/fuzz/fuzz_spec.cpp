// libFuzzer target: the loader of one spec file, chosen when the target is
// built (tests/fuzz/CMakeLists.txt): ACCGEN_FUZZ_PARSER, a spec::parse*Spec
// function, reading text as if from ACCGEN_FUZZ_FILE.
#include "generator/spec/spec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  return accgen::fuzz::expectRefusalsOnly([&] {
    accgen::DiagnosticEngine diags;
    (void)accgen::spec::ACCGEN_FUZZ_PARSER(accgen::fuzz::textOf(data, size),
                                           ACCGEN_FUZZ_FILE, diags);
  });
}
