// The emulator's process-wide state: configuration, devices with their
// capacity accounting and default streams, the allocation table and the
// tables of live stream and event handles.
//
// Note [Runtime lifetime]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The Runtime is created on first use and never destroyed. Backends free
// device memory from static destructors and from Python's interpreter
// shutdown, possibly after any global of ours would have died, so the tables
// must outlive every other static. At exit an atexit handler stops the stream
// workers (each finishes its current item; queued work is dropped) so no
// thread runs while the process tears down; later calls run their work inline
// on the caller. In a child forked after a stream worker started, the workers
// do not exist: every call returns accErrorNotInitialized (see
// docs/driver-interface.md). A child forked before any worker started uses
// the runtime as its parent would.
#pragma once

#include <atomic>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "accgen/driver.h"
#include "allocation.h"
#include "capture.h"
#include "config.h"
#include "event.h"
#include "stream.h"

namespace accgen::emulator {

inline constexpr int kLeastPriority = 0;
inline constexpr int kGreatestPriority = -2;
/// Note [Small work on an idle stream] (api_memory.cpp, api_stream.cpp):
/// memsets, copies and kernels touching at most this many bytes, queued on
/// an idle stream, run on the calling thread.
inline constexpr size_t kInlineWorkBytes = size_t{1} << 20;

struct Device {
  int index = 0;
  uint64_t capacity = 0;
  /// Bytes requested by live allocations (not rounded to pages).
  std::atomic<uint64_t> used{0};
  std::shared_ptr<Stream> default_stream;
  /// Captures in progress in a mode that forbids synchronizing calls.
  std::atomic<int> global_captures{0};

  /// Reserves `bytes` of capacity; false if they do not fit.
  bool reserve(uint64_t bytes);
  void unreserve(uint64_t bytes);
};

class Runtime {
 public:
  explicit Runtime(const Config& config);

  const Config& config() const { return config_; }
  int deviceCount() const { return config_.device_count; }
  bool validDevice(int device) const {
    return device >= 0 && device < config_.device_count;
  }
  Device& device(int index) { return devices_[index]; }
  AllocationTable& allocations() { return allocations_; }

  /// The calling thread's current device.
  static int currentDevice();
  static void setCurrentDevice(int device);

  /// Resolves a handle: null is the current device's default stream.
  /// Returns null for a handle that is not a live stream.
  std::shared_ptr<Stream> findStream(accStream_t handle);
  /// Like findStream, but a default stream (null, or the handle of one),
  /// which lives as long as the runtime, is found without the handle table
  /// and its reference count; `owner` keeps any other stream alive.
  Stream* findStream(accStream_t handle, std::shared_ptr<Stream>& owner);
  std::shared_ptr<Stream> createStream(int device, int priority);
  /// Removes a created stream from the table (default streams cannot be);
  /// returns it, or null if `handle` is unknown or a default stream.
  std::shared_ptr<Stream> removeStream(accStream_t handle);
  /// Every live stream of `device`, the default one first.
  std::vector<std::shared_ptr<Stream>> streamsOf(int device);

  std::shared_ptr<Event> findEvent(accEvent_t handle);
  std::shared_ptr<Event> createEvent(bool timing);
  std::shared_ptr<Event> removeEvent(accEvent_t handle);

  /// Waits for all work submitted so far to `device`'s streams, without
  /// reporting their sticky errors.
  void drainDevice(int device);

  /// A synchronizing call on `device`: while a capture of a mode that
  /// forbids them is in progress there, invalidates it and returns
  /// accErrorStreamCaptureUnsupported; accSuccess otherwise.
  accError_t refuseWhileCapturing(int device);

  /// Process exit: stops every worker (Note [Runtime lifetime]).
  void shutdown();

 private:
  const Config config_;
  std::unique_ptr<Device[]> devices_;
  AllocationTable allocations_;

  std::shared_mutex handles_mutex_;
  std::unordered_map<accStream_t, std::shared_ptr<Stream>> streams_;
  std::unordered_map<accEvent_t, std::shared_ptr<Event>> events_;
};

/// A call `stream` does not allow while it captures: invalidates the
/// capture and returns accErrorStreamCaptureUnsupported; accSuccess when
/// the stream does not capture.
accError_t refuseIfCapturing(Stream& stream);

/// The runtime, created on first use with the configuration of accInit (if
/// it came first) and the environment. Null only if creation failed.
Runtime* runtime();
/// accInit: creates the runtime with `params`; accErrorNotInitialized if it
/// already exists.
accError_t initializeRuntime(const accInitParams& params);
/// True in a child forked after a stream worker started (Note [Runtime
/// lifetime]).
bool inForkedChild();
/// Records that a stream worker started: a child forked from now on is
/// refused.
void noteWorkerStarted();

/// The common prologue of every entry point: rejects use in a forked child,
/// creates the runtime, and turns any exception into an error code so that
/// nothing unwinds through the C interface.
template <typename Body>
accError_t guarded(Body&& body) noexcept {
  if (inForkedChild()) {
    return accErrorNotInitialized;
  }
  try {
    Runtime* rt = runtime();
    if (rt == nullptr) {
      return accErrorMemoryAllocation;
    }
    return body(*rt);
  } catch (const std::bad_alloc&) {
    return accErrorMemoryAllocation;
  } catch (const std::system_error&) {
    return accErrorMemoryAllocation;
  } catch (...) {
    return accErrorInvalidValue;
  }
}

}  // namespace accgen::emulator
