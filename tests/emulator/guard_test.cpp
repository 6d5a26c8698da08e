// Note [Device memory access]: device memory faults on host access; a kernel
// gets access to exactly the allocations holding its buffer pointers, for
// its duration; ACCGEN_EMU_PROTECT=1 turns the guard on (the suite runs
// with it: tests/emulator/CMakeLists.txt), 0 or nothing leaves it off. Every
// case runs in a child process (gtest death tests, "threadsafe" style: a fresh
// exec), so the environment is set before the child's first driver call.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstring>
#include <string>

#include "test_util.h"

namespace accgen::emulator::test {
namespace {

// Sanitizers catch SIGSEGV themselves unless told not to (handle_segv=0),
// and then report it and exit instead of dying of the signal.
bool sanitizerHandlesSegv() {
  if (!kAddressSanitizer && !kThreadSanitizer) {
    return false;
  }
  const char* options =
      std::getenv(kAddressSanitizer ? "ASAN_OPTIONS" : "TSAN_OPTIONS");
  return options == nullptr || std::strstr(options, "handle_segv=0") == nullptr;
}

bool diedOfSegv(int status) {
  if (WIFSIGNALED(status)) {
    return WTERMSIG(status) == SIGSEGV;
  }
  return sanitizerHandlesSegv() && WIFEXITED(status) &&
         WEXITSTATUS(status) != 0;
}

// A sanitizer that handled the fault names it in its report.
std::string segvMessage() {
  return sanitizerHandlesSegv() ? "SEGV" : "";
}

class GuardDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

void* guardedAllocation(size_t size) {
  setenv("ACCGEN_EMU_PROTECT", "1", 1);
  void* ptr = nullptr;
  if (accMalloc(&ptr, size) != accSuccess) {
    std::_Exit(90);
  }
  return ptr;
}

TEST_F(GuardDeathTest, HostReadOfDeviceMemoryFaults) {
  EXPECT_EXIT(
      {
        void* dev = guardedAllocation(64);
        std::fprintf(stderr, "read %d\n", *static_cast<volatile int*>(dev));
        std::_Exit(0);
      },
      diedOfSegv, segvMessage());
}

TEST_F(GuardDeathTest, HostWriteAfterASyncLaunchFaults) {
  EXPECT_EXIT(
      {
        void* dev = guardedAllocation(64);
        // Inline on this thread, with access for the kernel only.
        if (launchSync(nullptr,
                       [dev] {
                         *static_cast<int*>(dev) = 1;
                         return accSuccess;
                       },
                       {dev}) != accSuccess) {
          std::_Exit(91);
        }
        *static_cast<volatile int*>(dev) = 2;
        std::_Exit(0);
      },
      diedOfSegv, segvMessage());
}

// accLaunchIfIdle runs the kernel before it returns, and takes no
// references to its buffers: it still gives the kernel access to them (the
// kernel's write lands), and only for its duration (the host's write after
// it faults).
int launchIfIdleWriting(void* dev) {
  Closure write = [dev] {
    *static_cast<volatile int*>(dev) = 1;
    return *static_cast<volatile int*>(dev) == 1 ? accSuccess
                                                 : accErrorInvalidValue;
  };
  const void* buffers[] = {dev};
  return accLaunchKernelEx(nullptr, runBorrowedClosure, &write, buffers, 1,
                           accLaunchIfIdle) == accSuccess
             ? 0
             : 91;
}

TEST_F(GuardDeathTest, ALaunchIfIdleHasAccessForItsDurationOnly) {
  EXPECT_EXIT(std::_Exit(launchIfIdleWriting(guardedAllocation(64))),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        void* dev = guardedAllocation(64);
        if (launchIfIdleWriting(dev) != 0) {
          std::_Exit(92);
        }
        *static_cast<volatile int*>(dev) = 2;
        std::_Exit(0);
      },
      diedOfSegv, segvMessage());
}

TEST_F(GuardDeathTest, HostWriteAfterAKernelFaults) {
  EXPECT_EXIT(
      {
        void* dev = guardedAllocation(64);
        launch(nullptr,
               [dev] {
                 *static_cast<int*>(dev) = 1;  // allowed: a declared buffer
                 return accSuccess;
               },
               {dev});
        if (accStreamSynchronize(nullptr) != accSuccess) {
          std::_Exit(91);
        }
        *static_cast<volatile int*>(dev) = 2;  // access ended with the kernel
        std::_Exit(0);
      },
      diedOfSegv, segvMessage());
}

// accKernelAddBuffer: memory a kernel obtains while it runs joins its
// access until it returns; outside a kernel there is nothing to join.
// Launched inline, the kernel writes the added allocation, which stays the
// kernel's alone: a host write after it faults.
int writeThroughAddedBuffer(void* added) {
  void* declared = guardedAllocation(64);
  if (accKernelAddBuffer(added) != accErrorNotReady) {
    return 91;
  }
  int seen = 0;
  if (launchSync(nullptr,
                 [added, &seen] {
                   if (accKernelAddBuffer(added) != accSuccess ||
                       accKernelAddBuffer(&seen) != accErrorInvalidValue) {
                     return accErrorInvalidValue;
                   }
                   *static_cast<volatile int*>(added) = 7;
                   seen = *static_cast<volatile int*>(added);
                   return accSuccess;
                 },
                 {declared}) != accSuccess) {
    return 92;
  }
  return seen == 7 ? 0 : 93;
}

TEST_F(GuardDeathTest, AKernelWritesTheBufferItAdded) {
  EXPECT_EXIT(std::_Exit(writeThroughAddedBuffer(guardedAllocation(64))),
              ::testing::ExitedWithCode(0), "");
}

TEST_F(GuardDeathTest, AnAddedBufferIsTheKernelsOnlyUntilItReturns) {
  EXPECT_EXIT(
      {
        void* added = guardedAllocation(64);
        if (writeThroughAddedBuffer(added) != 0) {
          std::_Exit(0);  // not the fault this test expects
        }
        *static_cast<volatile int*>(added) = 2;
        std::_Exit(0);
      },
      diedOfSegv, segvMessage());
}

TEST_F(GuardDeathTest, KernelTouchingAnUndeclaredAllocationFaults) {
  EXPECT_EXIT(
      {
        void* declared = guardedAllocation(64);
        void* other = guardedAllocation(64);
        launch(nullptr,
               [other] {
                 *static_cast<volatile int*>(other) = 1;
                 return accSuccess;
               },
               {declared});
        accStreamSynchronize(nullptr);
        std::_Exit(0);
      },
      diedOfSegv, segvMessage());
}

TEST_F(GuardDeathTest,
       KernelReachesTheWholeAllocationThroughAnInteriorPointer) {
  EXPECT_EXIT(
      {
        const size_t size = 3 * 4096 + 10;
        auto* dev = static_cast<char*>(guardedAllocation(size));
        launch(nullptr,
               [dev, size] {
                 dev[0] = 1;
                 dev[size - 1] = 2;
                 return accSuccess;
               },
               {dev + 5000});
        char ends[2] = {};
        if (accStreamSynchronize(nullptr) != accSuccess ||
            accMemcpy(&ends[0], dev, 1, accMemcpyDeviceToHost) != accSuccess ||
            accMemcpy(&ends[1], dev + size - 1, 1, accMemcpyDeviceToHost) !=
                accSuccess) {
          std::_Exit(92);
        }
        std::_Exit(ends[0] == 1 && ends[1] == 2 ? 0 : 93);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(GuardDeathTest, OverlappingKernelsShareAccess) {
  // Kernel A holds the buffer while kernel B, on another stream, uses and
  // releases it: A must keep its access until it ends (reference counting).
  EXPECT_EXIT(
      {
        void* dev = guardedAllocation(64);
        accStream_t a = nullptr;
        accStream_t b = nullptr;
        accStreamCreate(&a);
        accStreamCreate(&b);
        auto b_done = std::make_shared<Gate>();
        launch(
            a,
            [dev, b_done] {
              if (!b_done->wait()) {
                return accErrorNotReady;
              }
              *static_cast<volatile int*>(dev) = 7;
              return accSuccess;
            },
            {dev}, accLaunchWaitsOutside);
        launch(b,
               [dev] {
                 *static_cast<volatile int*>(dev) = 3;
                 return accSuccess;
               },
               {dev});
        if (accStreamSynchronize(b) != accSuccess) {
          std::_Exit(94);
        }
        b_done->open();
        if (accStreamSynchronize(a) != accSuccess) {
          std::_Exit(95);
        }
        int value = 0;
        accMemcpy(&value, dev, sizeof(value), accMemcpyDeviceToHost);
        std::_Exit(value == 7 ? 0 : 96);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(GuardDeathTest, GuardIsOffByDefault) {
  EXPECT_EXIT(
      {
        unsetenv("ACCGEN_EMU_PROTECT");
        void* dev = nullptr;
        if (accMalloc(&dev, 64) != accSuccess) {
          std::_Exit(97);
        }
        *static_cast<volatile int*>(dev) = 3;
        std::_Exit(*static_cast<volatile int*>(dev) == 3 ? 0 : 98);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(GuardDeathTest, ProtectZeroLeavesDeviceMemoryReadable) {
  EXPECT_EXIT(
      {
        setenv("ACCGEN_EMU_PROTECT", "0", 1);
        void* dev = nullptr;
        if (accMalloc(&dev, 64) != accSuccess) {
          std::_Exit(97);
        }
        *static_cast<volatile int*>(dev) = 5;
        int value = 0;
        accMemcpy(&value, dev, sizeof(value), accMemcpyDeviceToHost);
        std::_Exit(value == 5 && *static_cast<volatile int*>(dev) == 5 ? 0
                                                                       : 98);
      },
      ::testing::ExitedWithCode(0), "");
}

// Without the guard, accKernelAddBuffer still checks its pointer and that a
// kernel runs; it takes no reference (Note [Kernel buffer lookup]).
int addBufferUnguarded() {
  setenv("ACCGEN_EMU_PROTECT", "0", 1);
  void* added = nullptr;
  if (accMalloc(&added, 64) != accSuccess) {
    return 90;
  }
  if (accKernelAddBuffer(added) != accErrorNotReady) {
    return 91;
  }
  int host = 0;
  const accError_t launched = launchSync(
      nullptr,
      [added, &host] {
        if (accKernelAddBuffer(added) != accSuccess ||
            accKernelAddBuffer(static_cast<char*>(added) + 8) != accSuccess ||
            accKernelAddBuffer(&host) != accErrorInvalidValue) {
          return accErrorInvalidValue;
        }
        return accSuccess;
      },
      {});
  return launched == accSuccess ? 0 : 92;
}

TEST_F(GuardDeathTest, WithoutTheGuardAnAddedBufferIsChecked) {
  EXPECT_EXIT(std::_Exit(addBufferUnguarded()), ::testing::ExitedWithCode(0),
              "");
}

}  // namespace
}  // namespace accgen::emulator::test
