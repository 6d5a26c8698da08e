// Devices, error strings and initialisation: counts, the per-thread current
// device, properties, accInit after first use and argument validation.
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include "test_util.h"

namespace accgen::emulator::test {
namespace {

TEST(ErrorStrings, EveryCodeHasANameAndAMessage) {
  std::set<std::string> names;
  std::set<std::string> messages;
  for (int code = accSuccess; code <= accErrorNotSupported; ++code) {
    const auto error = static_cast<accError_t>(code);
    ASSERT_NE(accGetErrorName(error), nullptr);
    ASSERT_NE(accGetErrorString(error), nullptr);
    names.insert(accGetErrorName(error));
    messages.insert(accGetErrorString(error));
  }
  const int codes = accErrorNotSupported + 1;
  EXPECT_EQ(names.size(), static_cast<size_t>(codes)) << "names must differ";
  EXPECT_EQ(messages.size(), static_cast<size_t>(codes));
  EXPECT_STREQ(accGetErrorName(accErrorInvalidDevice), "accErrorInvalidDevice");
  EXPECT_STREQ(accGetErrorName(accErrorMemoryAllocation),
               "accErrorMemoryAllocation");
  EXPECT_STREQ(accGetErrorString(accSuccess), "no error");
}

TEST(ErrorStrings, UnknownCodesStillGetAString) {
  const auto bogus = static_cast<accError_t>(1234);
  ASSERT_NE(accGetErrorName(bogus), nullptr);
  ASSERT_NE(accGetErrorString(bogus), nullptr);
  EXPECT_STREQ(accGetErrorName(bogus), "accErrorUnrecognized");
}

TEST(Device, CountIsPositive) {
  EXPECT_GE(deviceCount(), 1);
  EXPECT_EQ(accGetDeviceCount(nullptr), accErrorInvalidValue);
}

TEST(Device, InitAfterFirstUseIsRejected) {
  int count = 0;
  ASSERT_EQ(accGetDeviceCount(&count), accSuccess);
  accInitParams params{4, 1 << 20};
  EXPECT_EQ(accInit(&params), accErrorNotInitialized);
  int after = 0;
  ASSERT_EQ(accGetDeviceCount(&after), accSuccess);
  EXPECT_EQ(after, count) << "a rejected accInit must change nothing";
  EXPECT_EQ(accInit(nullptr), accErrorInvalidValue);
}

TEST(Device, SetAndGetCurrentDevice) {
  const int count = deviceCount();
  int device = -1;
  ASSERT_EQ(accGetDevice(&device), accSuccess);
  EXPECT_EQ(device, 0);
  ASSERT_EQ(accSetDevice(count - 1), accSuccess);
  ASSERT_EQ(accGetDevice(&device), accSuccess);
  EXPECT_EQ(device, count - 1);
  EXPECT_EQ(accSetDevice(count), accErrorInvalidDevice);
  EXPECT_EQ(accSetDevice(-1), accErrorInvalidDevice);
  ASSERT_EQ(accGetDevice(&device), accSuccess);
  EXPECT_EQ(device, count - 1) << "a failed accSetDevice must not change it";
  EXPECT_EQ(accGetDevice(nullptr), accErrorInvalidValue);
  ASSERT_EQ(accSetDevice(0), accSuccess);
}

TEST(Device, CurrentDeviceIsPerThread) {
  if (deviceCount() < 2) {
    GTEST_SKIP() << "needs two devices";
  }
  ASSERT_EQ(accSetDevice(1), accSuccess);
  int other = -1;
  std::thread([&] { accGetDevice(&other); }).join();
  EXPECT_EQ(other, 0) << "a new thread starts at device 0";
  int mine = -1;
  ASSERT_EQ(accGetDevice(&mine), accSuccess);
  EXPECT_EQ(mine, 1);
  ASSERT_EQ(accSetDevice(0), accSuccess);
}

TEST(Device, Properties) {
  accDeviceProp prop;
  std::memset(&prop, 0x5a, sizeof(prop));
  ASSERT_EQ(accGetDeviceProperties(&prop, 0), accSuccess);
  EXPECT_STREQ(prop.name, "accgen emulated device");
  size_t free_bytes = 0;
  size_t total = 0;
  ASSERT_EQ(accMemGetInfo(&free_bytes, &total), accSuccess);
  EXPECT_EQ(prop.totalGlobalMem, total);
  const unsigned threads = std::thread::hardware_concurrency();
  EXPECT_EQ(prop.multiProcessorCount,
            threads > 0 ? static_cast<int>(threads) : 1);
  EXPECT_EQ(prop.major, 1);
  EXPECT_EQ(prop.minor, 0);
  EXPECT_EQ(accGetDeviceProperties(&prop, deviceCount()),
            accErrorInvalidDevice);
  EXPECT_EQ(accGetDeviceProperties(&prop, -1), accErrorInvalidDevice);
  EXPECT_EQ(accGetDeviceProperties(nullptr, 0), accErrorInvalidValue);
}

TEST(Device, SynchronizeWaitsForEveryStreamOfTheDevice) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  std::atomic<int> done{0};
  for (accStream_t s : {static_cast<accStream_t>(nullptr), stream}) {
    ASSERT_EQ(
        launch(s,
               [&done] {
                 std::this_thread::sleep_for(std::chrono::milliseconds(20));
                 done.fetch_add(1);
                 return accSuccess;
               }),
        accSuccess);
  }
  ASSERT_EQ(accDeviceSynchronize(), accSuccess);
  EXPECT_EQ(done.load(), 2);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

}  // namespace
}  // namespace accgen::emulator::test
