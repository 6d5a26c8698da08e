// Event recording, completion and timestamps. A recorded event is the pair
// (stream, item number of its marker); it is complete when the stream has
// completed that item, so querying never needs the worker's cooperation.
#include "event.h"

#include "capture.h"
#include "stream.h"
#include "work.h"

namespace accgen::emulator {

accError_t Event::record(const std::shared_ptr<Stream>& stream) {
  // The mutex is not held across submission: a stopped stream runs the
  // marker inline, and reached() takes the mutex.
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = ++issued_generation_;
  }
  Work marker;
  marker.kind = WorkKind::kRecord;
  marker.event = shared_from_this();
  marker.generation = generation;
  if (std::shared_ptr<Capture> capture = stream->capture()) {
    // Note [Graph replay]: a launch of the graph records the event again.
    uint64_t mark = 0;
    const accError_t error =
        capture->recordEvent(*stream, std::move(marker), mark);
    if (error == accSuccess) {
      std::lock_guard<std::mutex> lock(mutex_);
      capture_ = capture;
      captured_stream_ = stream.get();
      captured_mark_ = mark;
    }
    return error;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    capture_.reset();
  }
  uint64_t seq = 0;
  const accError_t error = stream->submit(std::move(marker), seq);
  if (error != accSuccess) {
    return error;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation > generation_) {
    generation_ = generation;
    stream_ = stream;
    seq_ = seq;
  }
  return accSuccess;
}

std::shared_ptr<Capture> Event::capturedPoint(Stream*& stream, uint64_t& mark) {
  std::shared_ptr<Capture> capture;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    capture = capture_.lock();
    stream = captured_stream_;
    mark = captured_mark_;
  }
  if (capture != nullptr && !capture->active()) {
    return nullptr;
  }
  return capture;
}

void Event::reached(uint64_t generation, int64_t time_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation >= stamped_generation_) {
    stamped_generation_ = generation;
    time_ns_ = time_ns;
  }
}

void Event::point(std::shared_ptr<Stream>& stream, uint64_t& seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  stream = stream_;
  seq = seq_;
}

accError_t Event::query() {
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
  point(stream, seq);
  if (stream == nullptr || stream->isComplete(seq)) {
    return accSuccess;
  }
  return accErrorNotReady;
}

void Event::synchronize() {
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
  point(stream, seq);
  if (stream != nullptr) {
    stream->waitFor(seq);
  }
}

accError_t Event::timestamp(int64_t& time_ns) {
  if (!timing_) {
    return accErrorInvalidHandle;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream_ == nullptr) {
    return accErrorInvalidHandle;
  }
  // Seeing the item complete while holding the mutex means reached() ran
  // and released it before: the stamp is visible.
  if (!stream_->isComplete(seq_) || stamped_generation_ != generation_) {
    return accErrorNotReady;
  }
  time_ns = time_ns_;
  return accSuccess;
}

}  // namespace accgen::emulator
