// libFuzzer target: the reader of specs/accgen.lock (upgrade::parseLock).
#include "generator/upgrade/lock.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  return accgen::fuzz::expectRefusalsOnly([&] {
    (void)accgen::upgrade::parseLock(accgen::fuzz::textOf(data, size),
                                     "specs/accgen.lock");
  });
}
