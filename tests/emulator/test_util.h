// Helpers shared by the emulator tests: readable printing of error codes,
// kernels built from closures, a gate that kernels wait on (to hold a stream
// busy for as long as a test needs), and sanitizer detection.
#pragma once

#include <accgen/driver.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <thread>
#include <vector>

/// gtest prints accError_t by name.
inline void PrintTo(accError_t error, std::ostream* os) {
  *os << accGetErrorName(error);
}

namespace accgen::emulator::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

using Closure = std::function<accError_t()>;

inline accError_t runClosure(void* data) {
  std::unique_ptr<Closure> closure(static_cast<Closure*>(data));
  return (*closure)();
}

/// Launches `fn` on `stream` with access to `buffers`.
inline accError_t launch(accStream_t stream, Closure fn,
                         std::vector<const void*> buffers = {},
                         unsigned flags = accLaunchDefault) {
  auto* closure = new Closure(std::move(fn));
  accError_t error = accLaunchKernelEx(stream, runClosure, closure,
                                       buffers.data(), buffers.size(), flags);
  if (error != accSuccess) {
    delete closure;
  }
  return error;
}

inline accError_t runBorrowedClosure(void* data) {
  return (*static_cast<Closure*>(data))();
}

/// Runs `fn` on `stream` with access to `buffers` and returns once it ran
/// (accLaunchKernelSync: the closure may live on the caller's stack).
inline accError_t launchSync(accStream_t stream, Closure fn,
                             std::vector<const void*> buffers = {}) {
  return accLaunchKernelSync(stream, runBorrowedClosure, &fn, buffers.data(),
                             buffers.size());
}

/// A one-shot flag that kernels wait on, with a timeout so that a broken
/// emulator fails a test instead of hanging it.
class Gate {
 public:
  void open() { open_.store(true, std::memory_order_release); }
  bool isOpen() const { return open_.load(std::memory_order_acquire); }
  bool wait(
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!isOpen()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
  }

 private:
  std::atomic<bool> open_{false};
};

/// A kernel that holds its stream until `gate` opens (accErrorNotReady if it
/// never does), launched as launch() does with `buffers` and `flags`. Shared
/// ownership: a failing test may return while it waits.
inline accError_t holdStream(accStream_t stream, std::shared_ptr<Gate> gate,
                             std::vector<const void*> buffers = {},
                             unsigned flags = accLaunchDefault) {
  return launch(
      stream, [gate] { return gate->wait() ? accSuccess : accErrorNotReady; },
      std::move(buffers), flags);
}

inline int deviceCount() {
  int count = 0;
  EXPECT_EQ(accGetDeviceCount(&count), accSuccess);
  return count;
}

}  // namespace accgen::emulator::test
