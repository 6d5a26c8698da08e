// Emulated kernels on the device's streams: the launch, the warnings and
// exceptions of the CPU code it runs, and the process's exit.
#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/Exception.h>

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
                   c10::function_ref<void()> fn, bool fresh_results) {
  parkIfExiting();
  noteDeviceThread();
  Launch launch{fn, nullptr, {}, false};
  launch.warnings.fresh_results = fresh_results;
  // The CPU kernel reads this frame: a synchronous launch, which runs it on
  // this thread when the stream is idle.
  ACCGEN_CHECK(accLaunchKernelSync(currentNativeStream(device), &runLaunch,
                                   &launch, buffers.data(), buffers.size()));
  parkIfExiting();
  finishLaunch(launch);
  return launch.warnings.resized;
}

}  // namespace detail

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

bool runOnDeviceIfIdle(c10::DeviceIndex device,
                       c10::ArrayRef<const void*> buffers,
                       c10::function_ref<void()> fn) {
  // An exiting process parks other threads in runOnDevice, which needs the
  // caller's lock released first.
  if (C10_UNLIKELY(g_exiting.load(std::memory_order_acquire))) {
    return false;
  }
  noteDeviceThread();
  Launch launch{fn, nullptr, {}, false};
  const accError_t launched =
      accLaunchKernelEx(currentNativeStream(device), &runLaunch, &launch,
                        buffers.data(), buffers.size(), accLaunchIfIdle);
  if (!launch.ran && launched == accErrorNotReady) {
    return false;
  }
  ACCGEN_CHECK(launched);
  finishLaunch(launch);
  return true;
}

}  // namespace accgen::runtime::emulate
