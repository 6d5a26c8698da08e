// Creation, handle tables and shutdown of the process-wide runtime
// (Note [Runtime lifetime] in runtime.h).
#include "runtime.h"

#include <pthread.h>

#include <cstdlib>
#include <mutex>

namespace accgen::emulator {
namespace {

std::atomic<Runtime*> g_runtime{nullptr};
// Constant-initialized and trivially destructible: usable at any point of
// static initialization or destruction.
std::mutex g_create_mutex;
std::atomic<bool> g_forked_child{false};
// Whether a stream worker was ever started in this process.
std::atomic<bool> g_workers_started{false};

thread_local int tls_device = 0;

void shutdownAtExit() {
  if (g_forked_child.load(std::memory_order_relaxed)) {
    return;  // the workers belong to the parent
  }
  if (Runtime* rt = g_runtime.load(std::memory_order_acquire)) {
    rt->shutdown();
  }
}

// Note [Runtime lifetime]: only the workers do not survive fork(). A child
// of a process that never started one has the whole runtime (its tables,
// and device memory, which is the parent's host memory copied) and uses it
// as the parent would; CUDA likewise poisons only the children of a
// process that initialized it.
void markForkedChild() {
  if (g_workers_started.load(std::memory_order_relaxed)) {
    g_forked_child.store(true, std::memory_order_relaxed);
  }
}

// Creates the runtime; called with g_create_mutex held.
Runtime* createLocked(const Config& config) {
  auto* rt = new (std::nothrow) Runtime(config);
  if (rt == nullptr) {
    return nullptr;
  }
  g_runtime.store(rt, std::memory_order_release);
  std::atexit(shutdownAtExit);
  pthread_atfork(nullptr, nullptr, markForkedChild);
  return rt;
}

}  // namespace

bool Device::reserve(uint64_t bytes) {
  uint64_t current = used.load(std::memory_order_relaxed);
  do {
    if (bytes > capacity - current) {
      return false;
    }
  } while (!used.compare_exchange_weak(current, current + bytes,
                                       std::memory_order_relaxed));
  return true;
}

void Device::unreserve(uint64_t bytes) {
  used.fetch_sub(bytes, std::memory_order_relaxed);
}

Runtime::Runtime(const Config& config)
    : config_(config), devices_(new Device[config.device_count]) {
  for (int i = 0; i < config_.device_count; ++i) {
    Device& device = devices_[i];
    device.index = i;
    device.capacity = config_.memory_per_device;
    device.default_stream =
        std::make_shared<Stream>(i, kLeastPriority, true, config_.spin_ns);
    streams_.emplace(device.default_stream->handle(), device.default_stream);
  }
}

int Runtime::currentDevice() {
  return tls_device;
}
void Runtime::setCurrentDevice(int device) {
  tls_device = device;
}

std::shared_ptr<Stream> Runtime::findStream(accStream_t handle) {
  if (handle == nullptr) {
    return devices_[tls_device].default_stream;
  }
  std::shared_lock<std::shared_mutex> lock(handles_mutex_);
  auto it = streams_.find(handle);
  return it == streams_.end() ? nullptr : it->second;
}

Stream* Runtime::findStream(accStream_t handle,
                            std::shared_ptr<Stream>& owner) {
  if (handle == nullptr) {
    return devices_[tls_device].default_stream.get();
  }
  for (int d = 0; d < config_.device_count; ++d) {
    Stream* candidate = devices_[d].default_stream.get();
    if (candidate->handle() == handle) {
      return candidate;
    }
  }
  owner = findStream(handle);
  return owner.get();
}

std::shared_ptr<Stream> Runtime::createStream(int device, int priority) {
  auto stream =
      std::make_shared<Stream>(device, priority, false, config_.spin_ns);
  std::unique_lock<std::shared_mutex> lock(handles_mutex_);
  streams_.emplace(stream->handle(), stream);
  return stream;
}

std::shared_ptr<Stream> Runtime::removeStream(accStream_t handle) {
  std::unique_lock<std::shared_mutex> lock(handles_mutex_);
  auto it = streams_.find(handle);
  if (it == streams_.end() || it->second->isDefault()) {
    return nullptr;
  }
  std::shared_ptr<Stream> stream = std::move(it->second);
  streams_.erase(it);
  return stream;
}

std::vector<std::shared_ptr<Stream>> Runtime::streamsOf(int device) {
  std::vector<std::shared_ptr<Stream>> result;
  result.push_back(devices_[device].default_stream);
  std::shared_lock<std::shared_mutex> lock(handles_mutex_);
  for (const auto& [handle, stream] : streams_) {
    if (stream->device() == device && !stream->isDefault()) {
      result.push_back(stream);
    }
  }
  return result;
}

std::shared_ptr<Event> Runtime::findEvent(accEvent_t handle) {
  if (handle == nullptr) {
    return nullptr;
  }
  std::shared_lock<std::shared_mutex> lock(handles_mutex_);
  auto it = events_.find(handle);
  return it == events_.end() ? nullptr : it->second;
}

std::shared_ptr<Event> Runtime::createEvent(bool timing) {
  auto event = std::make_shared<Event>(timing);
  std::unique_lock<std::shared_mutex> lock(handles_mutex_);
  events_.emplace(event->handle(), event);
  return event;
}

std::shared_ptr<Event> Runtime::removeEvent(accEvent_t handle) {
  std::unique_lock<std::shared_mutex> lock(handles_mutex_);
  auto it = events_.find(handle);
  if (it == events_.end()) {
    return nullptr;
  }
  std::shared_ptr<Event> event = std::move(it->second);
  events_.erase(it);
  return event;
}

void Runtime::drainDevice(int device) {
  // Snapshot first: work submitted while we wait is not ours to wait for.
  std::vector<std::shared_ptr<Stream>> streams = streamsOf(device);
  std::vector<uint64_t> targets;
  targets.reserve(streams.size());
  for (const auto& stream : streams) {
    targets.push_back(stream->submitted());
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    streams[i]->waitFor(targets[i]);
  }
}

accError_t Runtime::refuseWhileCapturing(int device) {
  if (devices_[device].global_captures.load(std::memory_order_acquire) == 0) {
    return accSuccess;
  }
  for (const auto& stream : streamsOf(device)) {
    if (std::shared_ptr<Capture> capture = stream->capture();
        capture != nullptr && capture->global()) {
      capture->invalidate(accErrorStreamCaptureUnsupported);
    }
  }
  return accErrorStreamCaptureUnsupported;
}

accError_t refuseIfCapturing(Stream& stream) {
  if (std::shared_ptr<Capture> capture = stream.capture()) {
    return capture->invalidate(accErrorStreamCaptureUnsupported);
  }
  return accSuccess;
}

void Runtime::shutdown() {
  setShuttingDown();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::shared_lock<std::shared_mutex> lock(handles_mutex_);
    for (const auto& [handle, stream] : streams_) {
      streams.push_back(stream);
    }
  }
  // Wake workers blocked in cross-stream waits before joining any of them.
  for (const auto& stream : streams) {
    stream->wakeWaiters();
  }
  for (const auto& stream : streams) {
    stream->stop();
  }
}

Runtime* runtime() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt != nullptr) {
    return rt;
  }
  std::lock_guard<std::mutex> lock(g_create_mutex);
  rt = g_runtime.load(std::memory_order_acquire);
  if (rt != nullptr) {
    return rt;
  }
  return createLocked(resolveConfig(0, 0));
}

accError_t initializeRuntime(const accInitParams& params) {
  std::lock_guard<std::mutex> lock(g_create_mutex);
  if (g_runtime.load(std::memory_order_acquire) != nullptr) {
    return accErrorNotInitialized;
  }
  return createLocked(resolveConfig(params.deviceCount, params.memoryPerDevice))
             ? accSuccess
             : accErrorMemoryAllocation;
}

void noteWorkerStarted() {
  g_workers_started.store(true, std::memory_order_relaxed);
}

bool inForkedChild() {
  return g_forked_child.load(std::memory_order_relaxed);
}

}  // namespace accgen::emulator
