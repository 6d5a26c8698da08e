// Entry points for streams and kernel launches.
#include <algorithm>

#include "runtime.h"
#include "work.h"

using accgen::emulator::AllocationRef;
using accgen::emulator::Capture;
using accgen::emulator::guarded;
using accgen::emulator::kGreatestPriority;
using accgen::emulator::kLeastPriority;
using accgen::emulator::refuseIfCapturing;
using accgen::emulator::Runtime;
using accgen::emulator::Stream;
using accgen::emulator::Work;
using accgen::emulator::WorkKind;

namespace {

// A kernel work item with the allocations holding `buffers`; false when a
// non-null pointer lies in no allocation.
bool kernelWork(Runtime& rt, accKernelFn_t fn, void* user_data,
                const void* const* buffers, size_t num_buffers, Work& work) {
  work.kind = WorkKind::kKernel;
  work.fn = fn;
  work.user_data = user_data;
  if (num_buffers == 0) {
    return true;
  }
  return rt.allocations().findForKernel(buffers, num_buffers, work.allocations);
}

// Note [Small work on an idle stream], for kernels: an asynchronous launch
// of a kernel that touches device memory, at most kInlineWorkBytes of it,
// onto an idle stream runs on the launching thread, as a waiting thread
// runs queued work (Note [Waiting threads run queued work]): no wake-up of
// the stream's worker, which on a two-core virtual machine cost the
// launching thread about 20 us (the futex wake's inter-processor interrupt)
// and the next operator a wait for the worker. A kernel without buffers
// (a timer, a wait for a host flag) and one launched with
// accLaunchWaitsOutside (a collective that waits for its peers) is queued.
bool runsWhereLaunched(const Work& work, unsigned flags) {
  if ((flags & accLaunchWaitsOutside) != 0 || work.allocations.size() == 0) {
    return false;
  }
  size_t bytes = 0;
  for (const AllocationRef& allocation : work.allocations) {
    bytes += allocation->size();
  }
  return bytes <= accgen::emulator::kInlineWorkBytes;
}

// accLaunchIfIdle: Note [Synchronous launch] without the wait. Its caller
// holds something the stream's queued work may need, so a busy stream, or
// one that captures a graph (Note [Graph replay]: only a kernel whose data
// the driver owns can run again), declines before anything is looked up.
// The kernel runs before the call returns, while the caller holds its
// buffers: it takes no references to them (Note [Kernel buffer lookup]).
accError_t launchNow(accStream_t stream, accKernelFn_t fn, void* user_data,
                     const void* const* buffers, size_t num_buffers) {
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> owner;
    Stream* target = rt.findStream(stream, owner);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (target->capture() != nullptr || !target->mayRunHere()) {
      return accErrorNotReady;
    }
    constexpr size_t kInline = 8;
    accgen::emulator::Allocation* inline_found[kInline];
    std::vector<accgen::emulator::Allocation*> more;
    accgen::emulator::Allocation** found = inline_found;
    if (num_buffers > kInline) {
      more.resize(num_buffers);
      found = more.data();
    }
    size_t count = 0;
    if (!rt.allocations().resolveForKernel(buffers, num_buffers, found,
                                           count)) {
      return accErrorInvalidValue;
    }
    // Access matters only where device memory is guarded: elsewhere the
    // allocations were looked up to refuse unknown pointers.
    const accError_t error = accgen::emulator::runKernelNow(
        fn, user_data, found, rt.config().protect ? count : 0);
    const accError_t pending = target->takeError();
    return pending != accSuccess ? pending : error;
  });
}

// accLaunchKernelEx, or with `wait` accLaunchKernelSync; with `owned`
// (accLaunchKernelOwned) the work releases the user data, which a capture
// may keep for replays.
accError_t launchKernel(accStream_t stream, accKernelFn_t fn, void* user_data,
                        const void* const* buffers, size_t num_buffers,
                        bool wait, unsigned flags = accLaunchDefault,
                        std::shared_ptr<void> owned = nullptr,
                        bool is_owned = false) {
  if (fn == nullptr || (num_buffers != 0 && buffers == nullptr) ||
      (flags != accLaunchDefault && flags != accLaunchWaitsOutside &&
       flags != accLaunchIfIdle)) {
    return accErrorInvalidValue;
  }
  if (flags == accLaunchIfIdle) {
    return launchNow(stream, fn, user_data, buffers, num_buffers);
  }
  return guarded([&](Runtime& rt) {
    Work work;
    if (!kernelWork(rt, fn, user_data, buffers, num_buffers, work)) {
      return accErrorInvalidValue;
    }
    std::shared_ptr<Stream> owner;
    Stream* target = rt.findStream(stream, owner);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (std::shared_ptr<Capture> capture = target->capture()) {
      // Note [Graph replay]: only a kernel whose data the driver owns can
      // run again.
      if (wait || !is_owned) {
        return capture->invalidate(accErrorStreamCaptureUnsupported);
      }
      work.owned = std::move(owned);
      return capture->record(*target, std::move(work));
    }
    work.owned = std::move(owned);
    if (!wait) {
      if (runsWhereLaunched(work, flags) && target->idle()) {
        return target->submitAndRun(std::move(work));
      }
      uint64_t seq = 0;
      return target->submit(std::move(work), seq);
    }
    // Note [Synchronous launch]
    // ~~~~~~~~~~~~~~~~~~~~~~~~
    // The result of accLaunchKernel plus accStreamSynchronize. On an idle
    // stream the kernel runs on this thread (nothing queued could run before
    // it, and the caller would only wait), which saves waking the worker and
    // being woken by it: microseconds each on a loaded machine, more than a
    // small operator's whole kernel. The kernel's error is returned rather
    // than left sticky, after an earlier sticky error of the stream.
    const accError_t error = target->runOrdered(std::move(work));
    const accError_t pending = target->takeError();
    return pending != accSuccess ? pending : error;
  });
}

}  // namespace

extern "C" {

accError_t accKernelAddBuffer(const void* ptr) {
  if (ptr == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    if (!rt.config().protect) {
      // Access matters only where device memory is guarded: elsewhere the
      // pointer is checked, and the kernel's caller holds the memory for
      // the call (Note [Kernel buffer lookup]).
      if (!rt.allocations().holdsKernelBuffer(ptr)) {
        return accErrorInvalidValue;
      }
      return accgen::emulator::hostKernelRunning() ? accSuccess
                                                   : accErrorNotReady;
    }
    AllocationRef allocation = rt.allocations().findForKernel(ptr);
    if (allocation == nullptr) {
      return accErrorInvalidValue;
    }
    return accgen::emulator::addKernelBuffer(std::move(allocation));
  });
}

accError_t accDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least == nullptr || greatest == nullptr) {
    return accErrorInvalidValue;
  }
  *least = kLeastPriority;
  *greatest = kGreatestPriority;
  return accSuccess;
}

accError_t accStreamCreate(accStream_t* stream) {
  return accStreamCreateWithPriority(stream, 0, kLeastPriority);
}

accError_t accStreamCreateWithPriority(accStream_t* stream, unsigned flags,
                                       int priority) {
  if (stream == nullptr || flags != 0) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    // Out-of-range priorities are clamped, as CUDA does.
    const int clamped = std::clamp(priority, kGreatestPriority, kLeastPriority);
    *stream = rt.createStream(Runtime::currentDevice(), clamped)->handle();
    return accSuccess;
  });
}

accError_t accStreamDestroy(accStream_t stream) {
  if (stream == nullptr) {
    return accErrorInvalidHandle;  // the default stream is not destroyable
  }
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> removed = rt.removeStream(stream);
    if (removed == nullptr) {
      return accErrorInvalidHandle;
    }
    // Work submitted by threads that resolved the handle before removal is
    // drained too: submissions after stop() run inline.
    removed->drain();
    removed->stop();
    return accSuccess;
  });
}

accError_t accStreamQuery(accStream_t stream) {
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (accError_t e = refuseIfCapturing(*target); e != accSuccess) {
      return e;
    }
    // A worker sets a kernel's error before it marks the kernel complete:
    // once the stream is seen idle, every error of its work is seen, and
    // one reported earlier could be followed by a NotReady for the same
    // kernel. So errors are reported when the work completed.
    if (!target->idle()) {
      return accErrorNotReady;
    }
    return target->takeError();
  });
}

accError_t accStreamSynchronize(accStream_t stream) {
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (accError_t e = refuseIfCapturing(*target); e != accSuccess) {
      return e;
    }
    target->drain();
    return target->takeError();
  });
}

accError_t accStreamWaitEvent(accStream_t stream, accEvent_t event,
                              unsigned flags) {
  if (flags != 0) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    std::shared_ptr<accgen::emulator::Event> source = rt.findEvent(event);
    if (target == nullptr || source == nullptr) {
      return accErrorInvalidHandle;
    }
    // A point recorded in a capture: the waiting stream joins it (or joins
    // back); a capturing stream ignores points outside its capture, which
    // its replays come after.
    Stream* point_stream = nullptr;
    uint64_t mark = 0;
    if (std::shared_ptr<Capture> capture =
            source->capturedPoint(point_stream, mark)) {
      if (target->capture() == nullptr) {
        target->setCapture(capture);
      }
      capture->wait(target, point_stream, mark);
      return accSuccess;
    }
    if (target->capture() != nullptr) {
      return accSuccess;
    }
    Work work;
    work.kind = WorkKind::kWait;
    source->point(work.wait_stream, work.wait_seq);
    // Never recorded, or the same stream (where order already holds):
    // nothing to wait for.
    if (work.wait_stream == nullptr || work.wait_stream == target) {
      return accSuccess;
    }
    if (work.wait_stream->isComplete(work.wait_seq)) {
      // Already reached: nothing to wait for, but a failure there fails
      // this stream too (the contract in accgen/driver.h).
      if (work.wait_stream->hasError()) {
        target->setError(accErrorLaunchFailure);
      }
      return accSuccess;
    }
    uint64_t seq = 0;
    return target->submit(std::move(work), seq);
  });
}

accError_t accStreamGetDevice(accStream_t stream, int* device) {
  if (device == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    *device = target->device();
    return accSuccess;
  });
}

accError_t accStreamGetPriority(accStream_t stream, int* priority) {
  if (priority == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    *priority = target->priority();
    return accSuccess;
  });
}

accError_t accGetDefaultStream(int device, accStream_t* stream) {
  if (stream == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    if (!rt.validDevice(device)) {
      return accErrorInvalidDevice;
    }
    *stream = rt.device(device).default_stream->handle();
    return accSuccess;
  });
}

accError_t accLaunchKernel(accStream_t stream, accKernelFn_t fn,
                           void* user_data, const void* const* buffers,
                           size_t num_buffers) {
  return launchKernel(stream, fn, user_data, buffers, num_buffers, false);
}

accError_t accLaunchKernelEx(accStream_t stream, accKernelFn_t fn,
                             void* user_data, const void* const* buffers,
                             size_t num_buffers, unsigned flags) {
  return launchKernel(stream, fn, user_data, buffers, num_buffers, false,
                      flags);
}

accError_t accLaunchKernelOwned(accStream_t stream, accKernelFn_t fn,
                                void* user_data, accReleaseFn_t release,
                                const void* const* buffers,
                                size_t num_buffers) {
  // The driver owns the data from here on, also when the launch fails.
  std::shared_ptr<void> owned;
  try {
    owned = std::shared_ptr<void>(user_data, [release](void* data) {
      if (release != nullptr) {
        release(data);
      }
    });
  } catch (const std::bad_alloc&) {
    if (release != nullptr) {
      release(user_data);
    }
    return accErrorMemoryAllocation;
  }
  return launchKernel(stream, fn, user_data, buffers, num_buffers, false,
                      accLaunchDefault, std::move(owned), /*is_owned=*/true);
}

accError_t accLaunchKernelSync(accStream_t stream, accKernelFn_t fn,
                               void* user_data, const void* const* buffers,
                               size_t num_buffers) {
  return launchKernel(stream, fn, user_data, buffers, num_buffers, true);
}

}  // extern "C"
