// Stream capture (accStreamBeginCapture … accStreamEndCapture): while a
// stream captures, the work queued on it is recorded into its Capture
// instead of running; streams that wait for an event recorded in the
// capture join it. Note [Graph replay] (work.cpp, api_graph.cpp) says how a
// recorded graph runs.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "accgen/driver.h"
#include "work.h"

namespace accgen::emulator {

class Capture {
 public:
  Capture(int device, accStreamCaptureMode mode,
          std::shared_ptr<Stream> origin);

  unsigned long long id() const { return id_; }
  int device() const { return device_; }
  bool global() const { return mode_ != accStreamCaptureModeRelaxed; }
  Stream* origin() const { return origin_.get(); }

  /// Records `work`, issued on `from`, in order: accSuccess, or the
  /// capture's error once it is invalidated.
  accError_t record(Stream& from, Work&& work);
  /// Records an event's marker issued on `from`; `mark` identifies the
  /// point for a later wait (rejoin).
  accError_t recordEvent(Stream& from, Work&& marker, uint64_t& mark);
  /// `stream` waits for a point of the capture: it joins it, or, when it
  /// is already in it, the point's stream counts as joined back up to it.
  void wait(const std::shared_ptr<Stream>& stream, Stream* point_stream,
            uint64_t mark);
  /// Invalidates the capture (the first error stays) and returns `error`.
  accError_t invalidate(accError_t error);
  accStreamCaptureStatus status();
  /// False once the capture ended.
  bool active();
  /// Ends the capture: every stream leaves it; returns the recorded work,
  /// or the capture's error.
  accError_t finish(GraphNodes& nodes);

 private:
  struct Member {
    std::shared_ptr<Stream> stream;
    uint64_t recorded = 0;   // items this stream added
    uint64_t joined_to = 0;  // the last of them the origin waited for
  };

  const unsigned long long id_;
  const int device_;
  const accStreamCaptureMode mode_;
  const std::shared_ptr<Stream> origin_;
  std::mutex mutex_;
  GraphNodes nodes_;                             // guarded by mutex_
  accError_t error_ = accSuccess;                // guarded by mutex_
  bool ended_ = false;                           // guarded by mutex_
  std::unordered_map<Stream*, Member> members_;  // guarded by mutex_
};

}  // namespace accgen::emulator
