// The one door to the driver interface (accgen/driver.h): every call the
// runtime makes goes through ACCGEN_CHECK, which turns an error code into a
// c10 exception naming the call, its file and line and the driver's
// message. Out-of-memory becomes c10::OutOfMemoryError so that Python sees
// torch.OutOfMemoryError and can recover.
#pragma once

#include <accgen/driver.h>

#include <memory>
#include <utility>

#include <c10/macros/Macros.h>
#include <c10/util/ArrayRef.h>

namespace accgen::runtime::detail {

/// Throws the c10 exception for a failed driver call: c10::OutOfMemoryError
/// for accErrorMemoryAllocation, c10::Error otherwise.
[[noreturn]] void throwDriverError(accError_t error, const char* call,
                                   const char* file, int line,
                                   const char* function);

/// Trims a compiler-given path to its part from the last "csrc/" or
/// "runtime/" directory on, so that messages do not depend on where the
/// backend or accgen was built.
const char* shortSourcePath(const char* file);

}  // namespace accgen::runtime::detail

// --8<-- [start:check-macro]
/// Evaluates a driver call; on failure throws a c10 exception that names the
/// call, the file and line, and accGetErrorString() of the result.
#define ACCGEN_CHECK(expr)                                     \
  do {                                                         \
    const ::accError_t driver_error_ = (expr);                 \
    if (C10_UNLIKELY(driver_error_ != ::accSuccess)) {         \
      ::accgen::runtime::detail::throwDriverError(             \
          driver_error_, #expr, __FILE__, __LINE__, __func__); \
    }                                                          \
  } while (0)
// --8<-- [end:check-macro]

namespace accgen::runtime {

// Note [Work on an idle stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The runtime's own kernels (copies) and a vendor's kernels mostly find
// their stream idle, since small operators run at once (Note [Queued
// operators] in src/emulate/Launch.cpp). On an idle stream the kernel then
// runs at once on the caller's arguments (accLaunchIfIdle, on the calling
// thread in the emulator), which spares the hand-off to the stream's worker
// that the next operator would wait for, and keeps the kernel's CPU code on
// the caller's thread pools; only on a busy stream are arguments that the
// launch owns built, and the kernel queued.

/// Launches `Run(args)` on `stream` with access to the allocations that
/// hold `buffers`, in order with the stream's work. On an idle stream the
/// kernel runs at once on `args` (Note [Work on an idle stream]), which may
/// borrow what the caller holds (a TensorIterator over the caller's
/// tensors, built without owning them).
/// On a busy stream the kernel is queued instead, on the arguments `own()`
/// returns (a std::unique_ptr<Args>), which the driver keeps alive until it
/// releases them; they must own what the kernel reads (ownedByLaunch), and
/// the call returns at once.
template <class Args, accError_t (*Run)(Args&), class Own>
void launchBorrowing(accStream_t stream, Args& args,
                     c10::ArrayRef<const void*> buffers, Own&& own) {
  // One driver call when the stream is idle: accLaunchIfIdle runs the
  // kernel at once, or declines (accErrorNotReady) without running it.
  struct Inline {
    Args* args;
    bool ran;
  } at_once{&args, false};
  const accError_t launched = accLaunchKernelEx(
      stream,
      [](void* data) {
        auto* run = static_cast<Inline*>(data);
        run->ran = true;
        return Run(*run->args);
      },
      &at_once, buffers.data(), buffers.size(), accLaunchIfIdle);
  if (at_once.ran || launched != accErrorNotReady) {
    ACCGEN_CHECK(launched);
    return;
  }
  std::unique_ptr<Args> owned = std::forward<Own>(own)();
  // The driver owns `owned` from here on, and may run the kernel again (a
  // graph that captured it replays it): Run must leave its arguments as
  // they were.
  ACCGEN_CHECK(accLaunchKernelOwned(
      stream, [](void* data) { return Run(*static_cast<Args*>(data)); },
      owned.release(), [](void* data) { delete static_cast<Args*>(data); },
      buffers.data(), buffers.size()));
}

/// launchBorrowing for arguments the launch owns from the start: run at
/// once on an idle stream, else queued, keeping `args` alive until the
/// driver releases it.
template <class Args, accError_t (*Run)(Args&)>
void launchOwning(accStream_t stream, std::unique_ptr<Args> args,
                  c10::ArrayRef<const void*> buffers) {
  Args& lent = *args;
  launchBorrowing<Args, Run>(stream, lent, buffers,
                             [&args] { return std::move(args); });
}

}  // namespace accgen::runtime
