// Emulated kernels on the device's streams: the launch, the warnings and
// exceptions of the CPU code it runs, and the process's exit.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <ATen/ThreadLocalState.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/Exception.h>

#include "../Internal.h"
#include "Engine.h"
#include "accgen/runtime/Driver.h"

namespace accgen::runtime::emulate {
namespace {

// Collects the warnings of a kernel on its worker thread for the caller.
class WarningCollector final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    // A result allocated with its meta shape that the kernel resizes: the
    // engine notices (rule 2 of Note [How an emulated operator runs]) and
    // runs the operator another way; the warning concerns nobody.
    if (fresh_results && warning.msg().find("was resized since it had shape") !=
                             std::string::npos) {
      resized = true;
      return;
    }
    warnings.push_back(warning);
  }
  bool fresh_results = false;
  bool resized = false;
  std::vector<c10::Warning> warnings;
};

struct Launch {
  c10::function_ref<void()> fn;
  std::exception_ptr error;
  WarningCollector warnings;
  bool ran = false;
};

accError_t runLaunch(void* user_data) {
  auto* launch = static_cast<Launch*>(user_data);
  launch->ran = true;
  c10::WarningUtils::WarningHandlerGuard warning_guard(&launch->warnings);
  try {
    // The caller is below autograd, and so is the CPU kernel it runs.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    launch->fn();
  } catch (...) {
    launch->error = std::current_exception();
  }
  return accSuccess;
}

// Note [Exit with device work in flight]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Python 3.11 ends a daemon thread that takes the GIL back while the
// interpreter finalizes by unwinding its stack, and torch's bindings, which
// release the GIL around every operator, do not allow that: the process
// ends in "terminate called without an active exception". A thread in a
// device operator holds the GIL released for the whole kernel, so a program
// that exits while a daemon thread drives the device would end that way
// almost every time. So once Python starts to exit (an atexit handler of
// the device module calls beginExit), any other thread that reaches a
// device kernel, or returns from one, parks for good with the GIL released;
// the process then exits around it. The exiting thread itself carries on.
// A thread that returned from its kernel just before exit began, and so
// waits for the GIL inside torch's binding, would still be ended there: the
// exiting thread therefore lets go of the GIL for a moment when other
// threads have used the device (beginExit's caller, the device module's
// atexit handler), so that such a thread gets back to Python and parks in
// its next device kernel before the interpreter finalizes. The collectives'
// completion thread, which completes futures and drops tensors that Python
// holds (both take the GIL), parks the same way (parkIfExitingThread).
std::atomic<bool> g_exiting{false};
std::atomic<std::thread::id> g_exit_thread{};
// Threads that launched device kernels, each counted once.
std::atomic<int> g_device_threads{0};
thread_local bool tls_device_thread = false;

void noteDeviceThread() noexcept {
  if (C10_UNLIKELY(!tls_device_thread)) {
    tls_device_thread = true;
    g_device_threads.fetch_add(1, std::memory_order_relaxed);
  }
}

void parkIfExiting() noexcept {
  if (C10_UNLIKELY(g_exiting.load(std::memory_order_acquire)) &&
      std::this_thread::get_id() != g_exit_thread.load()) {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::hours(1));
    }
  }
}

// --8<-- [start:queued-operators]
// Note [Queued operators]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Device work does not make the host wait, as on CUDA. An emulated
// operator whose results are known before its kernel runs is queued on its
// stream, and the call returns at once:
//  - a functional operator computed through its out= overload (rule 1 of
//    Note [How an emulated operator runs]), its results allocated ahead
//    from its shape function or from the shapes learned for the call's key
//    (Note [Learned shapes] in Engine.cpp), once its out= kernel ran
//    without resizing a result (the first call of each operator in a
//    process waits; an operator of rule 0 qualifies once its structured
//    class, which is also its out= kernel, ran its loop);
//  - a functional operator without a usable out= overload, or whose out=
//    kernel resized what its shape function gave (mse_loss), once it
//    learned its shapes for the call's key: its CPU kernel's results are
//    copied into results allocated ahead with those shapes;
//  - an in-place or out= form whose registration brings its shape function
//    (at::meta::add_: the in-place forms of structured groups), which
//    checks the arguments on the host and keeps the geometry of the ones it
//    writes;
//  - a stub's loop (`kind: stub`), whose TensorIterator checked the
//    operands on the host: it is queued with a copy of the iterator that
//    holds them, unless the stub takes a generator;
//  - the hook operators, convolution and fused attention, once a call with
//    the same key ran (Note [Queued hook operators] in HookOps.cpp);
//  - views (unfold, view_as_real), which read no data: they run on the
//    host at once, without a place in the stream's order.
// Whatever may raise because of the arguments runs on the host before a
// call is queued (the device checks, the shape function, or an earlier call
// with the same key that did not raise), so an error in the arguments
// raises at the call, as on CUDA. Small work (at most kInlineBytes of
// tensors) on an idle stream runs at once on the calling thread: most calls
// of a small model, which then cost no hand-off to the stream's worker.
// Everything else waits for the stream: random operators (the default
// generator is swapped for the call), operators whose result shapes depend
// on the data (nonzero, as on CUDA), the CPU fallback (`kind: fallback`,
// which copies the operands to the host), in-place and out= forms without a
// shape function (those the emulate fallback catches: zero_, which
// zeros_like and torch.zeros run, and linalg_vector_norm.out), and the
// first call with a key of an operator that learns its shapes (the first
// call of each operator computed through its out= overload too). A graph
// capture can only queue: it queues those in-place and out= forms too,
// gives a
// functional operator with neither a shape function nor learned shapes its
// Meta kernel's shapes, and refuses what must wait (Note [Device graphs]).
// A queued kernel owns its host aliases and a boxed copy of its host
// arguments (Call::hostStack), and runs with the thread-local state of its
// caller (grad mode, dispatch keys, the profiler). An error it raises,
// data-dependent like CUDA's device-side asserts (an index out of range),
// becomes the stream's sticky error; its message is kept and raised at the
// stream's next synchronization (synchronize, a copy to the host, item(),
// the next operator that waits) as a RuntimeError. Its warnings are raised
// at the next operator the host runs. ACCGEN_LAUNCH_BLOCKING=1 makes every
// operator wait, as CUDA_LAUNCH_BLOCKING=1 does: an error then raises at its
// own call.
// --8<-- [end:queued-operators]

std::mutex g_deferred_mutex;
std::vector<std::string> g_deferred_errors;
std::vector<c10::Warning> g_deferred_warnings;
std::atomic<bool> g_has_deferred_warnings{false};

void deferWarnings(std::vector<c10::Warning>& warnings) {
  if (warnings.empty()) {
    return;
  }
  const std::lock_guard<std::mutex> lock(g_deferred_mutex);
  for (c10::Warning& w : warnings) {
    g_deferred_warnings.push_back(std::move(w));
  }
  g_has_deferred_warnings.store(true, std::memory_order_release);
}

// Runs `body`, a queued kernel's work, on the stream's worker: its
// warnings are raised at the host's next operator, an exception becomes the
// stream's sticky error, its message kept under `what` for the next
// synchronization (Note [Queued operators]).
template <class Body>
accError_t runDeferring(std::string_view what, const Body& body) {
  WarningCollector warnings;
  {
    const c10::WarningUtils::WarningHandlerGuard warning_guard(&warnings);
    try {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      body();
    } catch (const std::exception& e) {
      const c10::Error* error = dynamic_cast<const c10::Error*>(&e);
      const std::lock_guard<std::mutex> lock(g_deferred_mutex);
      g_deferred_errors.push_back(c10::str(
          what, ": ",
          error != nullptr ? error->what_without_backtrace() : e.what()));
      return accErrorLaunchFailure;
    }
  }
  deferWarnings(warnings.warnings);
  return accSuccess;
}

accError_t runQueued(detail::QueuedKernel& kernel) {
  return runDeferring(kernel.op.schema().name(), [&] {
    // A copy: the call consumes its stack, and a graph that captured the
    // kernel runs it again (Note [Graph replay] in the emulator).
    torch::jit::Stack stack = kernel.stack;
    kernel.op.redispatchBoxed(detail::kCpuKeySet, &stack);
    for (std::size_t i = 0; i < kernel.results.size(); ++i) {
      const at::Tensor& result = stack.at(i).toTensor();
      at::Tensor& into = kernel.results[i];
      TORCH_CHECK(result.sizes() == into.sizes() &&
                      result.scalar_type() == into.scalar_type(),
                  "the CPU kernel returned a result of another shape or "
                  "dtype than its shape function gave");
      into.copy_(result);
    }
    for (const auto& w : kernel.written) {
      TORCH_CHECK(w.host.storage().data() == w.data &&
                      w.host.sizes() == c10::IntArrayRef(w.sizes) &&
                      w.host.strides() == c10::IntArrayRef(w.strides),
                  "the CPU kernel resized an argument it writes; run with "
                  "ACCGEN_LAUNCH_BLOCKING=1 to see where");
    }
  });
}

// Launches `work` (a Work with `accError_t run()`) owned by the launch on
// `device`'s current stream, with the caller's thread-local state (grad
// mode, dispatch keys, the profiler) on the stream's worker.
template <class Work>
void launchOwnedWork(c10::DeviceIndex device,
                     c10::ArrayRef<const void*> buffers, Work work) {
  parkIfExiting();
  noteDeviceThread();
  struct Owned {
    Work work;
    at::ThreadLocalState state;
  };
  auto owned = std::make_unique<Owned>(Owned{std::move(work), {}});
  ACCGEN_CHECK(accLaunchKernelOwned(
      currentNativeStream(device),
      [](void* data) {
        auto* run = static_cast<Owned*>(data);
        const at::ThreadLocalStateGuard state(run->state);
        return run->work.run();
      },
      owned.release(), [](void* data) { delete static_cast<Owned*>(data); },
      buffers.data(), buffers.size()));
}

// After a launch ran: raises its warnings again on this thread and rethrows
// its exception.
void finishLaunch(const Launch& launch) {
  for (const c10::Warning& warning : launch.warnings.warnings) {
    c10::warn(warning);
  }
  if (launch.error) {
    std::rethrow_exception(launch.error);
  }
}

}  // namespace

namespace detail {

bool launchAndWait(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                   c10::function_ref<void()> fn, bool fresh_results,
                   const c10::OperatorHandle* op) {
  parkIfExiting();
  noteDeviceThread();
  Launch launch{fn, nullptr, {}, false};
  launch.warnings.fresh_results = fresh_results;
  // The CPU kernel reads this frame: on an idle stream it runs at once on
  // this thread, through the launch that takes no references to the
  // buffers (Note [Kernel buffer lookup] in the emulator); else a
  // synchronous launch.
  const accStream_t stream = currentNativeStream(device);
  accError_t launched =
      accLaunchKernelEx(stream, &runLaunch, &launch, buffers.data(),
                        buffers.size(), accLaunchIfIdle);
  if (!launch.ran && launched == accErrorNotReady) {
    launched = accLaunchKernelSync(stream, &runLaunch, &launch, buffers.data(),
                                   buffers.size());
  }
  TORCH_CHECK(launched != accErrorStreamCaptureUnsupported,
              op != nullptr ? c10::toString(op->operator_name())
                            : std::string("this operation"),
              " runs synchronously on ", kDeviceName,
              " (a random operator, or one whose results' shapes depend on "
              "its data) and cannot be captured in a graph: keep it out of "
              "the graph (docs/guide/streams-events.md, \"Graphs\")");
  ACCGEN_CHECK(launched);
  parkIfExiting();
  finishLaunch(launch);
  return launch.warnings.resized;
}

bool launchIfIdle(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                  c10::function_ref<void()> fn, bool fresh_results,
                  bool& resized) {
  if (C10_UNLIKELY(g_exiting.load(std::memory_order_acquire))) {
    return false;
  }
  noteDeviceThread();
  Launch launch{fn, nullptr, {}, false};
  launch.warnings.fresh_results = fresh_results;
  const accError_t launched =
      accLaunchKernelEx(currentNativeStream(device), &runLaunch, &launch,
                        buffers.data(), buffers.size(), accLaunchIfIdle);
  if (!launch.ran && launched == accErrorNotReady) {
    return false;
  }
  ACCGEN_CHECK(launched);
  finishLaunch(launch);
  resized = launch.warnings.resized;
  return true;
}

void launchQueued(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                  std::unique_ptr<QueuedKernel> kernel) {
  struct Work {
    std::unique_ptr<QueuedKernel> kernel;
    accError_t run() const { return runQueued(*kernel); }
  };
  launchOwnedWork(device, buffers, Work{std::move(kernel)});
}

void launchQueuedFunction(c10::DeviceIndex device,
                          c10::ArrayRef<const void*> buffers,
                          std::function<void()> fn, std::string what) {
  struct Work {
    std::function<void()> fn;
    std::string what;
    accError_t run() const { return runDeferring(what, fn); }
  };
  launchOwnedWork(device, buffers, Work{std::move(fn), std::move(what)});
}

bool queueingAllowed() {
  static const bool allowed = [] {
    const char* blocking = std::getenv("ACCGEN_LAUNCH_BLOCKING");
    return blocking == nullptr || std::string(blocking) != "1";
  }();
  return allowed;
}

void raiseDeferredWarnings() {
  if (C10_LIKELY(!g_has_deferred_warnings.load(std::memory_order_acquire))) {
    return;
  }
  std::vector<c10::Warning> warnings;
  {
    const std::lock_guard<std::mutex> lock(g_deferred_mutex);
    warnings.swap(g_deferred_warnings);
    g_has_deferred_warnings.store(false, std::memory_order_release);
  }
  for (const c10::Warning& warning : warnings) {
    c10::warn(warning);
  }
}

}  // namespace detail
}  // namespace accgen::runtime::emulate

namespace accgen::runtime::detail {

void deferError(std::string message) {
  const std::lock_guard<std::mutex> lock(emulate::g_deferred_mutex);
  emulate::g_deferred_errors.push_back(std::move(message));
}

std::string takeDeferredErrors() {
  using emulate::g_deferred_errors;
  using emulate::g_deferred_mutex;
  const std::lock_guard<std::mutex> lock(g_deferred_mutex);
  std::string messages;
  for (const std::string& m : g_deferred_errors) {
    messages += c10::str("\n  ", m);
  }
  g_deferred_errors.clear();
  return messages;
}

}  // namespace accgen::runtime::detail

namespace accgen::runtime::emulate {

void parkIfExitingThread() noexcept {
  parkIfExiting();
  noteDeviceThread();
}

bool beginExit() noexcept {
  g_exit_thread.store(std::this_thread::get_id());
  g_exiting.store(true, std::memory_order_release);
  return g_device_threads.load(std::memory_order_relaxed) >
         (tls_device_thread ? 1 : 0);
}

void runOnDevice(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                 c10::function_ref<void()> fn) {
  detail::launchAndWait(device, buffers, fn, /*fresh_results=*/false);
}

void queueOnDevice(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                   std::size_t bytes, std::function<void()> fn,
                   std::string what) {
  if (!detail::queueingAllowed()) {
    runOnDevice(device, buffers, fn);
    return;
  }
  if (bytes <= detail::kInlineBytes && runOnDeviceIfIdle(device, buffers, fn)) {
    return;
  }
  detail::launchQueuedFunction(device, buffers, std::move(fn), std::move(what));
}

bool runOnDeviceIfIdle(c10::DeviceIndex device,
                       c10::ArrayRef<const void*> buffers,
                       c10::function_ref<void()> fn) {
  // An exiting process parks other threads in runOnDevice, which needs the
  // caller's lock released first: launchIfIdle declines then.
  bool resized = false;
  return detail::launchIfIdle(device, buffers, fn, /*fresh_results=*/false,
                              resized);
}

}  // namespace accgen::runtime::emulate
