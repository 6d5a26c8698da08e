// libFuzzer target: the reader of native_functions.yaml
// (schema::SchemaRegistry::loadFromString).
#include "generator/schema/schema.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  return accgen::fuzz::expectRefusalsOnly([&] {
    const auto registry = accgen::schema::SchemaRegistry::loadFromString(
        accgen::fuzz::textOf(data, size), "native_functions.yaml");
    (void)registry.allNames();
  });
}
