// A unit of work queued on a stream: a kernel, a copy, a memset, an event's
// timestamp or a wait for another stream. Work owns references to every
// allocation it touches, so freeing memory never unmaps it under queued work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "accgen/driver.h"
#include "allocation.h"

namespace accgen::emulator {

class Event;
class Stream;

enum class WorkKind : uint8_t {
  kKernel,
  kCopy,
  kMemset,
  kRecord,
  kWait,
  kGraph
};

struct Work;
/// The recorded work of a graph, in order (capture.h).
using GraphNodes = std::vector<Work>;

struct Work {
  WorkKind kind = WorkKind::kKernel;

  // kKernel
  accKernelFn_t fn = nullptr;
  void* user_data = nullptr;
  /// accLaunchKernelOwned: releases user_data once the last holder (this
  /// item, or the graph that captured it) is gone.
  std::shared_ptr<void> owned;

  // kCopy (src, or staging when the source was copied at submission) and
  // kMemset (dst, value).
  void* dst = nullptr;
  const void* src = nullptr;
  size_t count = 0;
  int value = 0;
  std::unique_ptr<std::byte[]> staging;

  /// Allocations the work reads or writes: kept alive and given access
  /// while it runs.
  AllocationRefs allocations;

  // kRecord
  std::shared_ptr<Event> event;
  uint64_t generation = 0;

  // kWait: until `wait_stream` completed its item `wait_seq`.
  std::shared_ptr<Stream> wait_stream;
  uint64_t wait_seq = 0;

  // kGraph: a launched graph's work, run in order as one item.
  std::shared_ptr<const GraphNodes> graph;
};

/// Runs `work` on the calling thread; returns its error (a kernel's
/// non-success code, accErrorLaunchFailure for a kernel that threw or
/// returned a value outside accError_t). Never throws.
accError_t runWork(Work& work) noexcept;

/// Runs the kernel `fn` on the calling thread with access to `allocations`,
/// which the caller keeps alive (Note [Kernel buffer lookup]); its error as
/// runWork returns it. Never throws.
accError_t runKernelNow(accKernelFn_t fn, void* user_data,
                        Allocation* const* allocations, size_t count) noexcept;

/// Whether a host kernel runs on this thread (accKernelAddBuffer's test).
bool hostKernelRunning() noexcept;

/// accKernelAddBuffer: `allocation` joins the access of the host kernel
/// running on this thread; accErrorNotReady when none is.
accError_t addKernelBuffer(AllocationRef allocation) noexcept;

}  // namespace accgen::emulator
