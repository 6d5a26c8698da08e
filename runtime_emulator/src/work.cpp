// Execution of one work item on the calling thread, with access to the
// allocations it declared and every exception contained: nothing a kernel
// does may unwind into a worker thread's loop.
#include "work.h"

#include <chrono>
#include <cstring>

#include "event.h"
#include "stream.h"

namespace accgen::emulator {
namespace {

bool isKnownError(int code) {
  return code >= accSuccess && code <= accErrorNotSupported;
}

// The host kernel running on this thread: the access it holds, and the
// allocations accKernelAddBuffer added to it.
struct RunningKernel {
  AccessScope* scope;
  AllocationRefs* added;
};
thread_local RunningKernel* tls_running_kernel = nullptr;

// Makes `running` the kernel of this thread while it lives.
class RunningKernelScope {
 public:
  explicit RunningKernelScope(RunningKernel* running)
      : outer_(tls_running_kernel) {
    tls_running_kernel = running;
  }
  ~RunningKernelScope() { tls_running_kernel = outer_; }
  RunningKernelScope(const RunningKernelScope&) = delete;
  RunningKernelScope& operator=(const RunningKernelScope&) = delete;

 private:
  RunningKernel* const outer_;
};

// Runs the kernel `fn` with the access `scope` holds; the allocations
// accKernelAddBuffer adds go to `added` and the scope.
accError_t runKernel(accKernelFn_t fn, void* user_data, AccessScope& scope,
                     AllocationRefs& added) noexcept {
  int code = accSuccess;
  RunningKernel running{&scope, &added};
  try {
    const RunningKernelScope running_scope(&running);
    code = fn(user_data);
  } catch (...) {
    return accErrorLaunchFailure;
  }
  if (code == accSuccess) {
    return accSuccess;
  }
  return isKnownError(code) ? static_cast<accError_t>(code)
                            : accErrorLaunchFailure;
}

// A kernel, copy or memset with access to its allocations.
accError_t runAccessing(const Work& work) noexcept {
  AllocationRefs added;  // outlives the access that scope releases
  AccessScope scope;
  for (const AllocationRef& allocation : work.allocations) {
    if (!scope.add(allocation.get())) {
      return work.kind == WorkKind::kKernel ? accErrorLaunchFailure
                                            : accErrorMemoryAllocation;
    }
  }
  switch (work.kind) {
    case WorkKind::kKernel:
      return runKernel(work.fn, work.user_data, scope, added);
    case WorkKind::kCopy:
      // memmove: an overlapping copy inside one allocation stays defined.
      std::memmove(work.dst,
                   work.staging != nullptr ? work.staging.get() : work.src,
                   work.count);
      return accSuccess;
    case WorkKind::kMemset:
      std::memset(work.dst, work.value, work.count);
      return accSuccess;
    default:
      return accSuccess;
  }
}

}  // namespace

bool hostKernelRunning() noexcept {
  return tls_running_kernel != nullptr;
}

accError_t addKernelBuffer(AllocationRef allocation) noexcept {
  RunningKernel* running = tls_running_kernel;
  if (running == nullptr) {
    return accErrorNotReady;
  }
  if (allocation == nullptr) {
    return accErrorInvalidValue;
  }
  try {
    Allocation* raw = allocation.get();
    running->added->push_back(std::move(allocation));
    if (!running->scope->add(raw)) {
      return accErrorMemoryAllocation;
    }
  } catch (...) {
    return accErrorMemoryAllocation;
  }
  return accSuccess;
}

accError_t runKernelNow(accKernelFn_t fn, void* user_data,
                        Allocation* const* allocations, size_t count) noexcept {
  AllocationRefs added;  // outlives the access that scope releases
  AccessScope scope;
  for (size_t i = 0; i < count; ++i) {
    if (!scope.add(allocations[i])) {
      return accErrorLaunchFailure;
    }
  }
  return runKernel(fn, user_data, scope, added);
}

accError_t runWork(Work& work) noexcept {
  switch (work.kind) {
    case WorkKind::kRecord: {
      const int64_t now =
          work.event->timing()
              ? std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count()
              : 0;
      work.event->reached(work.generation, now);
      return accSuccess;
    }
    case WorkKind::kWait:
      // The driver contract: a stream that waits for failed work fails
      // too (a failed collective, a kernel's error), so that nothing after
      // the wait reads what the failed work left.
      work.wait_stream->waitFor(work.wait_seq);
      return work.wait_stream->hasError() ? accErrorLaunchFailure : accSuccess;
    case WorkKind::kGraph:
      // Note [Graph replay]: the recorded kernels, copies and memsets in
      // capture order; records and waits were resolved at launch.
      for (const Work& node : *work.graph) {
        if (node.kind == WorkKind::kRecord || node.kind == WorkKind::kWait) {
          continue;
        }
        if (const accError_t error = runAccessing(node); error != accSuccess) {
          return error;
        }
      }
      return accSuccess;
    default:
      return runAccessing(work);
  }
}

}  // namespace accgen::emulator
