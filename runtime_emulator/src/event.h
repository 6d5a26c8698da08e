// An event: a point recorded in a stream's order, optionally with the steady
// clock time at which the stream reached it. Recording again re-arms the
// event at the new point; a generation number keeps a late marker of an
// earlier recording from stamping the current one.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "accgen/driver.h"

namespace accgen::emulator {

class Capture;
class Stream;

class Event : public std::enable_shared_from_this<Event> {
 public:
  explicit Event(bool timing) : timing_(timing) {}

  bool timing() const { return timing_; }
  accEvent_t handle() { return reinterpret_cast<accEvent_t>(this); }

  /// Records the event on `stream` (queues its marker, or records it in
  /// the stream's capture).
  accError_t record(const std::shared_ptr<Stream>& stream);
  /// When the last recording was captured and its capture is in progress:
  /// the capture, and the point's stream and mark (Capture::wait).
  std::shared_ptr<Capture> capturedPoint(Stream*& stream, uint64_t& mark);
  /// Called by the stream's worker when it reaches the marker.
  void reached(uint64_t generation, int64_t time_ns);

  /// accSuccess when never recorded or reached, accErrorNotReady otherwise.
  accError_t query();
  /// Blocks until the recorded point was reached (at once if never recorded).
  void synchronize();

  /// The recorded point, if any: `stream` is null when never recorded.
  void point(std::shared_ptr<Stream>& stream, uint64_t& seq);

  /// The time at which the recorded point was reached. accErrorInvalidHandle
  /// when timing is disabled or the event was never recorded,
  /// accErrorNotReady when the point was not reached yet.
  accError_t timestamp(int64_t& time_ns);

 private:
  const bool timing_;
  std::mutex mutex_;
  uint64_t issued_generation_ = 0;  // recordings started
  uint64_t generation_ = 0;         // the recording the point belongs to
  std::shared_ptr<Stream> stream_;  // null until recorded
  uint64_t seq_ = 0;
  uint64_t stamped_generation_ = 0;
  int64_t time_ns_ = 0;
  // The last recording, when it was captured.
  std::weak_ptr<Capture> capture_;
  Stream* captured_stream_ = nullptr;
  uint64_t captured_mark_ = 0;
};

}  // namespace accgen::emulator
