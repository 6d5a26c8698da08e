// Entry points for streams and kernel launches.
#include <algorithm>

#include "runtime.h"

using accgen::emulator::AllocationRef;
using accgen::emulator::guarded;
using accgen::emulator::kGreatestPriority;
using accgen::emulator::kLeastPriority;
using accgen::emulator::Runtime;
using accgen::emulator::Stream;
using accgen::emulator::Work;
using accgen::emulator::WorkKind;

extern "C" {

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
    if (accError_t error = target->takeError(); error != accSuccess) {
      return error;
    }
    return target->idle() ? accSuccess : accErrorNotReady;
  });
}

accError_t accStreamSynchronize(accStream_t stream) {
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
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
    Work work;
    work.kind = WorkKind::kWait;
    source->point(work.wait_stream, work.wait_seq);
    // Never recorded, already reached, or the same stream (where order
    // already holds): nothing to wait for.
    if (work.wait_stream == nullptr || work.wait_stream == target ||
        work.wait_stream->isComplete(work.wait_seq)) {
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
  if (fn == nullptr || (num_buffers != 0 && buffers == nullptr)) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    Work work;
    work.kind = WorkKind::kKernel;
    work.fn = fn;
    work.user_data = user_data;
    if (num_buffers != 0) {
      work.allocations.reserve(num_buffers);
      if (!rt.allocations().findForKernel(buffers, num_buffers,
                                          work.allocations)) {
        return accErrorInvalidValue;
      }
    }
    uint64_t seq = 0;
    if (stream == nullptr) {
      // The common case skips the handle table and its reference count.
      return rt.device(Runtime::currentDevice())
          .default_stream->submit(std::move(work), seq);
    }
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    return target->submit(std::move(work), seq);
  });
}

}  // extern "C"
