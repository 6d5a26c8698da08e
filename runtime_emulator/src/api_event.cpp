// Entry points for events.
#include "runtime.h"

using accgen::emulator::Event;
using accgen::emulator::guarded;
using accgen::emulator::Runtime;
using accgen::emulator::Stream;

namespace {

// The host cannot wait for a point recorded in a capture in progress: it
// is not in any stream's order until the graph is launched.
accError_t refuseCaptured(Event& event) {
  accgen::emulator::Stream* stream = nullptr;
  uint64_t mark = 0;
  if (auto capture = event.capturedPoint(stream, mark)) {
    return capture->invalidate(accErrorStreamCaptureUnsupported);
  }
  return accSuccess;
}

}  // namespace

extern "C" {

accError_t accEventCreate(accEvent_t* event) {
  return accEventCreateWithFlags(event, accEventDefault);
}

accError_t accEventCreateWithFlags(accEvent_t* event, unsigned flags) {
  if (event == nullptr ||
      (flags & ~static_cast<unsigned>(accEventDisableTiming)) != 0) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    *event = rt.createEvent((flags & accEventDisableTiming) == 0)->handle();
    return accSuccess;
  });
}

accError_t accEventDestroy(accEvent_t event) {
  return guarded([&](Runtime& rt) {
    // A pending marker keeps the event object alive until it is reached.
    return rt.removeEvent(event) != nullptr ? accSuccess
                                            : accErrorInvalidHandle;
  });
}

accError_t accEventRecord(accEvent_t event, accStream_t stream) {
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Event> target = rt.findEvent(event);
    std::shared_ptr<Stream> on = rt.findStream(stream);
    if (target == nullptr || on == nullptr) {
      return accErrorInvalidHandle;
    }
    return target->record(on);
  });
}

accError_t accEventQuery(accEvent_t event) {
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Event> target = rt.findEvent(event);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (accError_t e = refuseCaptured(*target); e != accSuccess) {
      return e;
    }
    return target->query();
  });
}

accError_t accEventSynchronize(accEvent_t event) {
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Event> target = rt.findEvent(event);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (accError_t e = refuseCaptured(*target); e != accSuccess) {
      return e;
    }
    target->synchronize();
    return accSuccess;
  });
}

accError_t accEventElapsedTime(float* ms, accEvent_t start, accEvent_t end) {
  if (ms == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Event> first = rt.findEvent(start);
    std::shared_ptr<Event> second = rt.findEvent(end);
    if (first == nullptr || second == nullptr) {
      return accErrorInvalidHandle;
    }
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    if (accError_t e = first->timestamp(start_ns); e != accSuccess) {
      return e;
    }
    if (accError_t e = second->timestamp(end_ns); e != accSuccess) {
      return e;
    }
    *ms = static_cast<float>(static_cast<double>(end_ns - start_ns) / 1e6);
    return accSuccess;
  });
}

}  // extern "C"
