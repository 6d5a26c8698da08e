// Configuration: the parsers of the environment variables, and in child
// processes (a fresh exec each) how accInit's hints and the environment
// combine, including invalid values that keep the defaults.
#include <stdlib.h>

#include <cstdio>

#include "config.h"
#include "test_util.h"

namespace accgen::emulator::test {
namespace {

TEST(ConfigParsing, DeviceCount) {
  EXPECT_EQ(parseDeviceCount("1"), 1);
  EXPECT_EQ(parseDeviceCount("64"), 64);
  for (const char* bad : {"0", "65", "-1", "+2", " 2", "2 ", "2x", "", "abc",
                          "99999999999999999999999"}) {
    EXPECT_EQ(parseDeviceCount(bad), std::nullopt) << "'" << bad << "'";
  }
  EXPECT_EQ(parseDeviceCount(nullptr), std::nullopt);
}

TEST(ConfigParsing, MemoryBytes) {
  EXPECT_EQ(parseMemoryBytes("1"), 1u);
  EXPECT_EQ(parseMemoryBytes("1048576"), 1048576u);
  EXPECT_EQ(parseMemoryBytes("64K"), 64u << 10);
  EXPECT_EQ(parseMemoryBytes("64k"), 64u << 10);
  EXPECT_EQ(parseMemoryBytes("3M"), 3u << 20);
  EXPECT_EQ(parseMemoryBytes("3MiB"), 3u << 20);
  EXPECT_EQ(parseMemoryBytes("2G"), uint64_t{2} << 30);
  EXPECT_EQ(parseMemoryBytes("1T"), uint64_t{1} << 40);
  for (const char* bad : {"0", "0G", "-5", "5X", "5MB", "5 M", "", "G",
                          "18446744073709551616", "16777216T"}) {
    EXPECT_EQ(parseMemoryBytes(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(ConfigParsing, FlagsAndSpin) {
  EXPECT_EQ(parseFlag("0"), false);
  EXPECT_EQ(parseFlag("1"), true);
  EXPECT_EQ(parseFlag("yes"), std::nullopt);
  EXPECT_EQ(parseFlag(""), std::nullopt);
  EXPECT_EQ(parseSpinMicros("0"), 0);
  EXPECT_EQ(parseSpinMicros("20"), 20000);
  EXPECT_EQ(parseSpinMicros("10001"), std::nullopt);
  EXPECT_EQ(parseSpinMicros("x"), std::nullopt);
}

class EnvironmentDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// In the child: exits 0 when the device count and every device's capacity
// are as expected, else prints what it saw and exits 1.
[[noreturn]] void expectConfiguration(int devices, uint64_t capacity) {
  int count = 0;
  if (accGetDeviceCount(&count) != accSuccess || count != devices) {
    std::fprintf(stderr, "device count %d, expected %d\n", count, devices);
    std::_Exit(1);
  }
  for (int d = 0; d < count; ++d) {
    accDeviceProp prop{};
    if (accGetDeviceProperties(&prop, d) != accSuccess ||
        prop.totalGlobalMem != capacity) {
      std::fprintf(stderr, "device %d capacity %llu, expected %llu\n", d,
                   static_cast<unsigned long long>(prop.totalGlobalMem),
                   static_cast<unsigned long long>(capacity));
      std::_Exit(1);
    }
  }
  void* ptr = nullptr;
  if (accSetDevice(devices - 1) != accSuccess ||
      accMalloc(&ptr, capacity + 1) != accErrorMemoryAllocation ||
      accMalloc(&ptr, capacity) != accSuccess || accFree(ptr) != accSuccess ||
      accSetDevice(devices) != accErrorInvalidDevice) {
    std::fprintf(stderr, "capacity not enforced\n");
    std::_Exit(1);
  }
  std::_Exit(0);
}

// accInit with the given hints (a function: braces in a macro argument
// would split it at their commas).
accError_t initWith(int devices, uint64_t capacity) {
  accInitParams params{devices, capacity};
  return accInit(&params);
}

void clearEnvironment() {
  unsetenv("ACCGEN_EMU_DEVICE_COUNT");
  unsetenv("ACCGEN_EMU_MEMORY_BYTES");
}

TEST_F(EnvironmentDeathTest, DefaultsAreTwoDevicesOfOneGiB) {
  EXPECT_EXIT(
      {
        clearEnvironment();
        expectConfiguration(2, uint64_t{1} << 30);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(EnvironmentDeathTest, EnvironmentSetsCountAndCapacity) {
  EXPECT_EXIT(
      {
        setenv("ACCGEN_EMU_DEVICE_COUNT", "5", 1);
        setenv("ACCGEN_EMU_MEMORY_BYTES", "64M", 1);
        expectConfiguration(5, uint64_t{64} << 20);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(EnvironmentDeathTest, InitParamsApplyWithoutEnvironment) {
  EXPECT_EXIT(
      {
        clearEnvironment();
        if (initWith(3, uint64_t{16} << 20) != accSuccess) {
          std::_Exit(2);
        }
        expectConfiguration(3, uint64_t{16} << 20);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(EnvironmentDeathTest, EnvironmentOverridesInitParams) {
  EXPECT_EXIT(
      {
        clearEnvironment();
        setenv("ACCGEN_EMU_DEVICE_COUNT", "4", 1);
        if (initWith(3, uint64_t{16} << 20) != accSuccess) {
          std::_Exit(2);
        }
        expectConfiguration(4, uint64_t{16} << 20);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(EnvironmentDeathTest, InitParamsOfZeroKeepDefaults) {
  EXPECT_EXIT(
      {
        clearEnvironment();
        if (initWith(0, 0) != accSuccess) {
          std::_Exit(2);
        }
        if (initWith(1, 1) != accErrorNotInitialized) {
          std::_Exit(3);
        }
        expectConfiguration(2, uint64_t{1} << 30);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(EnvironmentDeathTest, InvalidInitParamsAreRejected) {
  EXPECT_EXIT(
      {
        clearEnvironment();
        if (initWith(-1, 0) != accErrorInvalidValue ||
            initWith(kMaxDeviceCount + 1, 0) != accErrorInvalidValue) {
          std::_Exit(2);
        }
        // Rejected calls did not start the driver: a valid one still works.
        if (initWith(1, 4096) != accSuccess) {
          std::_Exit(3);
        }
        expectConfiguration(1, 4096);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(EnvironmentDeathTest, InvalidValuesKeepTheDefaults) {
  const std::pair<const char*, const char*> cases[] = {
      {"0", "0"}, {"abc", "12Q"}, {"65", "-1"}, {"-2", ""}, {"3x", "1.5G"}};
  for (const auto& [count, bytes] : cases) {
    EXPECT_EXIT(
        {
          setenv("ACCGEN_EMU_DEVICE_COUNT", count, 1);
          setenv("ACCGEN_EMU_MEMORY_BYTES", bytes, 1);
          expectConfiguration(2, uint64_t{1} << 30);
        },
        ::testing::ExitedWithCode(0), "")
        << "ACCGEN_EMU_DEVICE_COUNT='" << count << "' ACCGEN_EMU_MEMORY_BYTES='"
        << bytes << "'";
  }
}

TEST_F(EnvironmentDeathTest, InvalidValuesKeepTheInitParams) {
  EXPECT_EXIT(
      {
        setenv("ACCGEN_EMU_DEVICE_COUNT", "lots", 1);
        setenv("ACCGEN_EMU_MEMORY_BYTES", "0", 1);
        if (initWith(3, 8192) != accSuccess) {
          std::_Exit(2);
        }
        expectConfiguration(3, 8192);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace accgen::emulator::test
