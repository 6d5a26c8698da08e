// Process life cycle: exiting with work still queued, driver calls made
// after the exit handler stopped the workers (as torch makes them from late
// static destructors), and fork after the driver started.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "test_util.h"

namespace accgen::emulator::test {
namespace {

class LifecycleDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// A plain function with the duration as its argument: kernels dropped at
// exit never run, so they must not own heap memory (LeakSanitizer).
accError_t sleepFor(void* ms) {
  std::this_thread::sleep_for(
      std::chrono::milliseconds(reinterpret_cast<intptr_t>(ms)));
  return accSuccess;
}

accError_t sleepKernel(accStream_t stream, int ms) {
  return accLaunchKernel(stream, sleepFor,
                         reinterpret_cast<void*>(static_cast<intptr_t>(ms)),
                         nullptr, 0);
}

// Queues about four seconds of work on several streams, then exits.
[[noreturn]] void exitWithOutstandingWork() {
  accStream_t stream = nullptr;
  if (accStreamCreate(&stream) != accSuccess) {
    std::_Exit(2);
  }
  int devices = 0;
  accGetDeviceCount(&devices);
  for (int i = 0; i < 100; ++i) {
    sleepKernel(stream, 20);
    for (int d = 0; d < devices; ++d) {
      accStream_t default_stream = nullptr;
      accGetDefaultStream(d, &default_stream);
      sleepKernel(default_stream, 20);
    }
  }
  std::exit(0);
}

TEST_F(LifecycleDeathTest, ExitWithOutstandingWorkIsCleanAndPrompt) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EXIT(exitWithOutstandingWork(), ::testing::ExitedWithCode(0), "");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  // Each worker finishes only the kernel it is running (20 ms); draining
  // the queues would take two seconds or more.
  EXPECT_LT(elapsed, std::chrono::milliseconds(1500));
}

void* g_late_buffer = nullptr;

// Runs after the driver's own exit handler (it was registered earlier).
void lateUse() {
  if (accFree(g_late_buffer) != accSuccess) {
    std::_Exit(3);
  }
  void* dev = nullptr;
  if (accMalloc(&dev, 64) != accSuccess) {
    std::_Exit(4);
  }
  static std::atomic<bool> ran{false};
  if (launch(nullptr,
             [] {
               ran.store(true);
               return accSuccess;
             },
             {dev}) != accSuccess ||
      accStreamSynchronize(nullptr) != accSuccess || !ran.load()) {
    std::_Exit(5);
  }
  int value = 9;
  int back = 0;
  if (accMemcpy(dev, &value, sizeof(value), accMemcpyHostToDevice) !=
          accSuccess ||
      accMemcpy(&back, dev, sizeof(back), accMemcpyDeviceToHost) !=
          accSuccess ||
      back != 9 || accFree(dev) != accSuccess ||
      accDeviceSynchronize() != accSuccess) {
    std::_Exit(6);
  }
  accEvent_t event = nullptr;
  if (accEventCreate(&event) != accSuccess ||
      accEventRecord(event, nullptr) != accSuccess ||
      accEventSynchronize(event) != accSuccess) {
    std::_Exit(7);
  }
}

[[noreturn]] void useAfterExitHandler() {
  std::atexit(
      lateUse);  // before the driver starts, so it runs after its handler
  if (accMalloc(&g_late_buffer, 4096) != accSuccess) {
    std::_Exit(2);
  }
  sleepKernel(nullptr, 10);
  const void* buffers[] = {g_late_buffer};
  accLaunchKernel(nullptr, sleepFor, nullptr, buffers, 1);  // may be dropped
  std::exit(0);
}

TEST_F(LifecycleDeathTest, DriverCallsAfterTheExitHandlerStillWork) {
  EXPECT_EXIT(useAfterExitHandler(), ::testing::ExitedWithCode(0), "");
}

// In a process of its own (a threadsafe death test runs it in a fresh
// exec): the device counted and memory allocated, no worker started, then
// fork. The child uses the driver fully, a stream worker included, as a
// child of a process that never initialized CUDA does.
[[noreturn]] void forkBeforeAnyWorker() {
  int count = 0;
  void* dev = nullptr;
  if (accGetDeviceCount(&count) != accSuccess || count < 1 ||
      accMalloc(&dev, 64) != accSuccess) {
    std::_Exit(2);
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::_Exit(3);
  }
  if (pid == 0) {
    accStream_t stream = nullptr;
    void* mine = nullptr;
    const bool used =
        accStreamCreate(&stream) == accSuccess &&
        accMalloc(&mine, 64) == accSuccess &&
        accMemsetAsync(mine, 7, 64, stream) == accSuccess &&
        launch(stream, [] { return accSuccess; }, {mine}) == accSuccess &&
        accStreamSynchronize(stream) == accSuccess &&
        accFree(mine) == accSuccess && accFree(dev) == accSuccess &&
        accStreamDestroy(stream) == accSuccess;
    std::_Exit(used ? 0 : 4);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
    std::_Exit(5);
  }
  std::_Exit(WEXITSTATUS(status) == 0 && accFree(dev) == accSuccess
                 ? 0
                 : 10 + WEXITSTATUS(status));
}

TEST_F(LifecycleDeathTest, ChildForkedBeforeAnyWorkerUsesTheDriver) {
  EXPECT_EXIT(forkBeforeAnyWorker(), ::testing::ExitedWithCode(0), "");
}

TEST(Lifecycle, ForkedChildIsRefusedAndParentCarriesOn) {
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, 64), accSuccess);
  ASSERT_EQ(launch(nullptr, [] { return accSuccess; }, {dev}), accSuccess);
  std::fflush(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The parent's workers do not exist here: no call may wait for them.
    void* mine = nullptr;
    int count = 0;
    const bool refused =
        accMalloc(&mine, 64) == accErrorNotInitialized &&
        accStreamSynchronize(nullptr) == accErrorNotInitialized &&
        accFree(dev) == accErrorNotInitialized &&
        accGetDeviceCount(&count) == accErrorNotInitialized &&
        accGetErrorString(accErrorNotInitialized) != nullptr;
    if (kAddressSanitizer) {
      // LeakSanitizer's exit-time check cannot stop the parent's threads in
      // a forked child and may report false leaks.
      std::_Exit(refused ? 0 : 1);
    }
    std::exit(refused ? 0 : 1);  // exit(), so the driver's exit handler runs
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(accStreamSynchronize(nullptr), accSuccess);
  EXPECT_EQ(accFree(dev), accSuccess);
}

}  // namespace
}  // namespace accgen::emulator::test
