// libFuzzer target: the schema grammar (schema::parseFunctionSchema) and
// the C++ signature of what parses.
#include "generator/schema/schema.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  return accgen::fuzz::expectRefusalsOnly([&] {
    const accgen::schema::FunctionSchema schema =
        accgen::schema::parseFunctionSchema(accgen::fuzz::textOf(data, size));
    (void)schema.str();
  });
}
