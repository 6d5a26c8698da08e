// Helpers of the driver acceptance tests: the test module's functions by
// name and launches with a typed argument block.
#pragma once

#include <accgen/driver.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>

inline void PrintTo(accError_t error, std::ostream* os) {
  *os << accGetErrorName(error);
}

namespace accgen::driver_test {

/// The test module, loaded once.
inline accModule_t testModule() {
  static accModule_t module = [] {
    accModule_t loaded = nullptr;
    EXPECT_EQ(accModuleLoad(&loaded, ACCGEN_TEST_KERNELS), accSuccess);
    return loaded;
  }();
  return module;
}

inline accFunction_t function(const char* name) {
  accFunction_t fn = nullptr;
  EXPECT_EQ(accModuleGetFunction(&fn, testModule(), name), accSuccess);
  return fn;
}

template <class Args>
accError_t launch(const char* name, const Args& args,
                  accStream_t stream = nullptr) {
  return accLaunchFunction(function(name), &args, sizeof(args), stream);
}

inline accError_t fill(uint32_t* out, uint64_t n, uint32_t value,
                       accStream_t stream = nullptr) {
  struct {
    uint32_t* out;
    uint64_t n;
    uint32_t value;
  } args{out, n, value};
  return launch("fill_u32", args, stream);
}

inline accError_t sleepOn(accStream_t stream, uint64_t ms) {
  return launch("sleep_ms", ms, stream);
}

inline uint32_t readWord(const uint32_t* device_ptr) {
  uint32_t value = 0;
  EXPECT_EQ(accMemcpy(&value, device_ptr, sizeof(value), accMemcpyDeviceToHost),
            accSuccess);
  return value;
}

}  // namespace accgen::driver_test
