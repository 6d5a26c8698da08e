#include "capture.h"

#include <atomic>

#include "stream.h"

namespace accgen::emulator {
namespace {

std::atomic<unsigned long long> g_next_capture_id{1};

}  // namespace

Capture::Capture(int device, accStreamCaptureMode mode,
                 std::shared_ptr<Stream> origin)
    : id_(g_next_capture_id.fetch_add(1, std::memory_order_relaxed)),
      device_(device),
      mode_(mode),
      origin_(std::move(origin)) {
  members_.emplace(origin_.get(), Member{origin_, 0, 0});
}

accError_t Capture::record(Stream& from, Work&& work) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (error_ != accSuccess) {
    return accErrorStreamCaptureInvalidated;
  }
  nodes_.push_back(std::move(work));
  const auto it = members_.find(&from);
  if (it != members_.end()) {
    ++it->second.recorded;
  }
  return accSuccess;
}

accError_t Capture::recordEvent(Stream& from, Work&& marker, uint64_t& mark) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (error_ != accSuccess) {
    return accErrorStreamCaptureInvalidated;
  }
  nodes_.push_back(std::move(marker));
  const auto it = members_.find(&from);
  mark = it != members_.end() ? it->second.recorded : 0;
  return accSuccess;
}

void Capture::wait(const std::shared_ptr<Stream>& stream, Stream* point_stream,
                   uint64_t mark) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (members_.find(stream.get()) == members_.end()) {
    members_.emplace(stream.get(), Member{stream, 0, 0});
    return;
  }
  const auto it = members_.find(point_stream);
  if (it != members_.end() && it->second.joined_to < mark) {
    it->second.joined_to = mark;
  }
}

accError_t Capture::invalidate(accError_t error) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (error_ == accSuccess) {
    error_ = error;
  }
  return error;
}

accStreamCaptureStatus Capture::status() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return error_ == accSuccess ? accStreamCaptureStatusActive
                              : accStreamCaptureStatusInvalidated;
}

bool Capture::active() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return !ended_;
}

accError_t Capture::finish(GraphNodes& nodes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
  accError_t result =
      error_ == accSuccess ? accSuccess : accErrorStreamCaptureInvalidated;
  for (auto& [stream, member] : members_) {
    // A joined stream's work after the origin's last wait for it would run
    // after the graph: CUDA refuses such a capture.
    if (result == accSuccess && stream != origin_.get() &&
        member.recorded > member.joined_to) {
      result = accErrorStreamCaptureUnjoined;
    }
    member.stream->setCapture(nullptr);
  }
  members_.clear();
  if (result == accSuccess) {
    nodes = std::move(nodes_);
  }
  nodes_.clear();
  return result;
}

}  // namespace accgen::emulator
