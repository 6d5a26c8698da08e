// The device allocator's memory history and snapshot: what
// torch.<device>.memory._record_memory_history and _snapshot() read, in the
// structure of CUDA's (Note [Memory history] in src/Allocator.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

namespace accgen::runtime {

/// One event of the allocator, as CUDA's allocator records it.
struct MemoryTraceEntry {
  enum class Action {
    kAlloc,          ///< a block handed to a tensor
    kFreeRequested,  ///< the tensor freed it (other streams may still use it)
    kFreeCompleted,  ///< the block is back in the cache
    kSegmentAlloc,   ///< memory obtained from the driver
    kSegmentFree,    ///< memory returned to the driver
    kOom,            ///< an allocation the driver could not serve
  };
  Action action = Action::kAlloc;
  std::uintptr_t addr = 0;
  std::size_t size = 0;
  c10::StreamId stream = 0;
  std::int64_t time_us = 0;
  std::size_t device_free = 0;  ///< kOom: the driver's free bytes
  /// Where it happened (torch::CapturedTraceback), when stacks are kept.
  std::shared_ptr<c10::GatheredContext> context;
};

/// A segment (memory from the driver) and its block. The allocator hands
/// out whole segments, so each segment holds exactly one block.
struct MemorySegment {
  enum class State { kActiveAllocated, kActivePendingFree, kInactive };
  c10::DeviceIndex device = 0;
  std::uintptr_t address = 0;
  std::size_t size = 0;
  std::size_t requested = 0;  ///< bytes the tensor asked for
  c10::StreamId stream = 0;   ///< the allocation stream
  bool small = false;         ///< in the small pool
  /// The graph pool holding the block (Note [Graph memory pools]), or
  /// {0, 0}.
  c10::MempoolId_t pool{0, 0};
  State state = State::kInactive;
  /// Where the block was last allocated, when stacks are kept.
  std::shared_ptr<c10::GatheredContext> context;
};

struct MemorySnapshot {
  std::vector<MemorySegment> segments;
  /// Per device, oldest first.
  std::vector<std::vector<MemoryTraceEntry>> traces;
};

/// Starts (or stops, and forgets the trace) recording the allocator's
/// events: at most `max_entries` a device are kept, the oldest dropped
/// first; with `stacks`, each event and block keeps where it happened
/// (torch::CapturedTraceback, Python frames included once the Python side
/// installed its unwinder).
void recordMemoryHistory(bool enabled, bool stacks, std::size_t max_entries);

/// The allocator's segments and the recorded events.
MemorySnapshot memorySnapshot();

}  // namespace accgen::runtime
