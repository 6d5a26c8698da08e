// Device time for PyTorch's profilers, measured with timed driver events.
//
// Note [Profiling device time]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch 2.13 asks a PrivateUse1 backend for device time in two ways, and
// both are served here by the same measurement: a timed event recorded on
// the calling thread's current stream when an operator starts and another
// when it ends. Their elapsed time is how long the stream took from reaching
// the operator's first work to finishing its last: the operator's kernels,
// copies and any gap while the host was still queueing them.
//  - torch.profiler.profile(activities=[..., ProfilerActivity.PrivateUse1])
//    runs Kineto in state KINETO_PRIVATEUSE1, which takes device activities
//    from an IActivityProfiler the backend registers with
//    PrivateUse1ProfilerRegistry. Kineto tells every session when an
//    operator starts and ends (push/popCorrelationId, on the operator's
//    thread, with PyTorch's correlation id). An operator's interval is cut
//    where the operators it calls on the same stream start and end, and
//    when the trace is processed each piece between them becomes a kernel
//    activity of the device ("<device>: <operator>") linked to the
//    operator: the device time of the work it queued itself. PyTorch adds
//    an operator's pieces to its device time (FunctionEvent.device_time)
//    and its callees' to its total, so the device time of nested operators
//    is counted once, as with CUDA's kernels.
//  - torch.autograd.profiler.profile(use_device="<device>") runs in state
//    KINETO_PRIVATEUSE1_FALLBACK, which records through the ProfilerStubs
//    given to registerPrivateUse1Methods at each operator's start and end
//    and asks them for the elapsed time.
// Operators that queue no device work still get a pair of events, a few
// microseconds apart: the measurement cannot tell them apart, as with
// CUDA's legacy profiler.
//
// This file is compiled on its own, with USE_KINETO (torch's wheels are
// built with Kineto; its registry header needs the macro) and without the
// runtime's precompiled header, which is built without it.
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <IActivityProfiler.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "Internal.h"
#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

// A timed driver event recorded on `stream`, owned by a shared_ptr that
// destroys it.
std::shared_ptr<void> recordTimedEvent(const c10::Stream& stream) {
  const c10::DeviceGuard guard(stream.device());
  accEvent_t event = nullptr;
  ACCGEN_CHECK(accEventCreate(&event));
  std::shared_ptr<void> owned(event, [](void* raw) {
    (void)accEventDestroy(static_cast<accEvent_t>(raw));
  });
  ACCGEN_CHECK(accEventRecord(event, nativeStream(stream)));
  return owned;
}

// Milliseconds from `start` to `end`, once both completed.
float elapsedMilliseconds(const std::shared_ptr<void>& start,
                          const std::shared_ptr<void>& end) {
  auto* start_event = static_cast<accEvent_t>(start.get());
  auto* end_event = static_cast<accEvent_t>(end.get());
  ACCGEN_CHECK(accEventSynchronize(start_event));
  ACCGEN_CHECK(accEventSynchronize(end_event));
  float milliseconds = 0;
  ACCGEN_CHECK(accEventElapsedTime(&milliseconds, start_event, end_event));
  return milliseconds;
}

// ------------------------------------------------------ legacy fallback

struct Stubs final : public torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device,
              torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::Stream stream = getCurrentStream();
    if (device != nullptr) {
      *device = stream.device_index();
    }
    *event = recordTimedEvent(stream);
    if (cpu_ns != nullptr) {
      *cpu_ns = c10::getTime();
    }
  }

  // Microseconds, as PyTorch's KinetoEvent::privateuse1ElapsedUs expects.
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* event,
                const torch::profiler::impl::ProfilerVoidEventStub* event2)
      const override {
    return elapsedMilliseconds(*event, *event2) * 1000.0F;
  }

  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex count = deviceCount();
    const c10::DeviceIndex previous = currentDevice();
    for (c10::DeviceIndex device = 0; device < count; ++device) {
      setDevice(device);
      op(device);
    }
    setDevice(previous);
  }

  void synchronize() const override { ACCGEN_CHECK(accDeviceSynchronize()); }
};

// ------------------------------------------------------ Kineto activities

// One operator's device interval, from pushCorrelationId to its pop, as
// events on its stream: its start, the start and end of each operator it
// called on the same stream, its end. Pairs (0, 1), (2, 3), ... are the
// pieces that are its own (Note [Profiling device time]).
struct OperatorRange {
  std::uint64_t correlation = 0;
  c10::Stream stream{c10::Stream::DEFAULT, c10::Device(kDeviceType, 0)};
  std::vector<std::shared_ptr<void>> boundaries;
};

// Where one device's driver clock stands on the host's clock: a timed
// event and the host time (c10::getTime(), as PyTorch's CPU events) at
// which it completed.
struct ClockAnchor {
  std::shared_ptr<void> event;
  std::int64_t host_ns = 0;
};

class Session final : public libkineto::IActivityProfilerSession {
 public:
  Session() : span_(0, 0, kDeviceName) {}

  void start() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    recording_ = true;
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    recording_ = false;
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return errors_;
  }

  // Every push gets its entry, so that pops stay paired with their pushes;
  // an entry without events (not recording, or the driver failed) reports
  // nothing.
  void pushCorrelationId(std::uint64_t id) override {
    OperatorRange range;
    range.correlation = id;
    if (isRecording()) {
      guarded([&] {
        range.stream = getCurrentStream();
        range.boundaries.push_back(recordTimedEvent(range.stream));
      });
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    open_[std::this_thread::get_id()].push_back(std::move(range));
  }

  void popCorrelationId() override {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = open_.find(std::this_thread::get_id());
    if (it == open_.end() || it->second.empty()) {
      return;
    }
    OperatorRange range = std::move(it->second.back());
    it->second.pop_back();
    if (range.boundaries.empty()) {
      return;
    }
    lock.unlock();
    // On the stream of the start, even if the operator switched streams or
    // devices.
    std::shared_ptr<void> end;
    guarded([&] { end = recordTimedEvent(range.stream); });
    if (end == nullptr) {
      return;
    }
    lock.lock();
    range.boundaries.push_back(end);
    std::vector<OperatorRange>& open = open_[std::this_thread::get_id()];
    if (!open.empty() && open.back().stream == range.stream &&
        !open.back().boundaries.empty()) {
      std::vector<std::shared_ptr<void>>& caller = open.back().boundaries;
      caller.push_back(range.boundaries.front());
      caller.push_back(std::move(end));
    }
    closed_.push_back(std::move(range));
  }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback linked,
                    int64_t /*start_time*/, int64_t /*end_time*/) override {
    std::vector<OperatorRange> ranges;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ranges = std::move(closed_);
      closed_.clear();
    }
    guarded([&] {
      for (const OperatorRange& range : ranges) {
        const ClockAnchor& anchor = anchorOf(range.stream.device_index());
        const auto at_host = [&](const std::shared_ptr<void>& event) {
          return anchor.host_ns + static_cast<std::int64_t>(
                                      static_cast<double>(elapsedMilliseconds(
                                          anchor.event, event)) *
                                      1e6);
        };
        const auto id = static_cast<int32_t>(range.correlation);
        const libkineto::ITraceActivity* op = linked ? linked(id) : nullptr;
        const std::string name =
            std::string(kDeviceName) + ": " +
            (op != nullptr ? op->name() : std::string("operator"));
        for (std::size_t i = 0; i + 1 < range.boundaries.size(); i += 2) {
          libkineto::GenericTraceActivity activity(
              span_, libkineto::ActivityType::CONCURRENT_KERNEL, name);
          activity.startTime = at_host(range.boundaries[i]);
          activity.endTime = at_host(range.boundaries[i + 1]);
          activity.id = id;
          activity.setDevice(range.stream.device_index());
          activity.resource = static_cast<int32_t>(range.stream.id());
          activity.linked = op;
          logger.handleGenericActivity(activity);
        }
      }
    });
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return nullptr;
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    return {};
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return nullptr;
  }

 private:
  bool isRecording() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return recording_;
  }

  // Kineto's callbacks must not throw: a failure becomes one of errors().
  template <class Fn>
  void guarded(Fn fn) {
    try {
      fn();
    } catch (const std::exception& error) {
      const std::lock_guard<std::mutex> lock(mutex_);
      errors_.emplace_back(error.what());
    }
  }

  // Made after the trace stopped, so every range's events already precede
  // it on the device clock; differences only are used.
  const ClockAnchor& anchorOf(c10::DeviceIndex device) {
    auto it = anchors_.find(device);
    if (it != anchors_.end()) {
      return it->second;
    }
    ClockAnchor anchor;
    anchor.event = recordTimedEvent(getCurrentStream(device));
    ACCGEN_CHECK(
        accEventSynchronize(static_cast<accEvent_t>(anchor.event.get())));
    anchor.host_ns = c10::getTime();
    return anchors_.emplace(device, std::move(anchor)).first->second;
  }

  libkineto::TraceSpan span_;
  std::mutex mutex_;
  bool recording_ = false;
  std::unordered_map<std::thread::id, std::vector<OperatorRange>> open_;
  std::vector<OperatorRange> closed_;
  std::unordered_map<c10::DeviceIndex, ClockAnchor> anchors_;
  std::vector<std::string> errors_;
};

class ActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<libkineto::ActivityType>& availableActivities()
      const override {
    return activities_;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& /*config*/) override {
    if (activity_types.count(libkineto::ActivityType::CONCURRENT_KERNEL) == 0) {
      return nullptr;
    }
    return std::make_unique<Session>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/, int64_t /*duration_ms*/,
      const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = std::string(kDeviceName) + " operators";
  std::set<libkineto::ActivityType> activities_{
      libkineto::ActivityType::CONCURRENT_KERNEL};
};

}  // namespace

void detail::registerProfiler() {
  static Stubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  torch::profiler::impl::PrivateUse1ProfilerRegistry::instance()
      .registerFactory([]() -> std::unique_ptr<libkineto::IActivityProfiler> {
        return std::make_unique<ActivityProfiler>();
      });
}

}  // namespace accgen::runtime
