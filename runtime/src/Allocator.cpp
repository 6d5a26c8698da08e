// The caching device allocator of the device, registered for PrivateUse1 as a
// c10::DeviceAllocator so that torch.accelerator.memory_* and torch.<device>'s
// memory functions report on it.
//
// --8<-- [start:caching-allocator-note]
// Note [Device caching allocator]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Driver allocations are slow and synchronise the device, so freed blocks
// are kept per device, ordered by (allocation stream, size), and handed out
// again to requests on the same stream that fit within twice their rounded
// size, the block of a request's size freed last first (Note [Recently
// freed blocks]). Reuse on the allocation stream needs no synchronisation:
// work on a stream runs in order. A block that was also used on other streams
// (recordStream) only returns to the cache once events recorded on those
// streams at free time have completed, as in CUDA's allocator. When the
// driver runs out of memory, the device's cached blocks are released and
// the allocation retried once before torch.OutOfMemoryError is raised.
// empty_cache() returns every cached block to the driver.
//
// Statistics follow c10::CachingDeviceAllocator::DeviceStats: "allocated"
// counts blocks in use by tensors, "reserved" everything obtained from the
// driver (in use or cached); "small_pool" holds blocks up to 1 MiB. Note
// [Runtime tuning] says how a vendor changes these sizes.
// --8<-- [end:caching-allocator-note]
//
// --8<-- [start:memory-history-note]
// Note [Memory history]
// ~~~~~~~~~~~~~~~~~~~~~
// As CUDA's allocator does, this one reports every allocation and free to
// the profiler when it records memory (profile_memory=True), and, once
// torch.<device>.memory._record_memory_history() asked for it, keeps a
// trace of its events (alloc, free_requested, free_completed,
// segment_alloc, segment_free, oom) with the stack of each, and the stack
// of each block's allocation. _snapshot() returns the segments, their
// blocks and the trace in the structure of torch.cuda.memory._snapshot(),
// so torch.cuda._memory_viz reads it. Recording costs nothing while off:
// one relaxed atomic load an allocation.
// --8<-- [end:memory-history-note]
//
// --8<-- [start:graph-pools-note]
// Note [Graph memory pools]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// While a stream captures a graph, the allocations made on it (and on the
// streams that joined its capture) come from the graph's private pool, a
// MempoolId_t, as CUDA's allocator does: a replay writes to the addresses
// the capture saw, so that memory must not go to anyone else while a graph
// holds the pool. A block freed during or after the capture returns to the
// pool, where only captures into that pool take it again (graphs share a
// pool by passing its id, capture after capture). Neither empty_cache()
// nor an out-of-memory retry releases a pool's blocks; once the last graph
// holding the pool is reset or destroyed, its free blocks, and later its
// blocks still in use when they are freed, join the ordinary cache.
// --8<-- [end:graph-pools-note]
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include "Internal.h"
#include "accgen/runtime/Driver.h"
#include "accgen/runtime/MemoryHistory.h"
#include "accgen/runtime/Runtime.h"
#include "accgen/runtime/Tuning.h"

namespace accgen::runtime {
namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::DeviceStats;

std::size_t roundUp(std::size_t bytes) {
  const std::size_t round = tuning().device_allocator.round_bytes;
  return (bytes + round - 1) / round * round;
}

std::string formatBytes(std::size_t bytes) {
  constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) {
    return c10::str(bytes, " bytes");
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f %s", value, kUnits[unit]);
  return text;
}

struct Block {
  void* ptr = nullptr;
  std::size_t size = 0;       // bytes obtained from the driver
  std::size_t requested = 0;  // bytes asked for by the current user
  c10::DeviceIndex device = 0;
  c10::StreamId stream = 0;     // the allocation stream
  c10::MempoolId_t pool{0, 0};  // Note [Graph memory pools]
  bool allocated = false;
  std::vector<c10::Stream> stream_uses;  // other streams, see recordStream
  std::shared_ptr<c10::GatheredContext> context;  // Note [Memory history]
};

// Free blocks of one device, ordered for best fit within a stream.
using FreeKey = std::tuple<c10::StreamId, std::size_t, Block*>;

// Note [Recently freed blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The last kRecentBlocks blocks freed into a device's cache wait in a
// small array in front of its ordered free blocks, newest last, with the
// stream and size that select them. A request takes the newest of them
// whose size is exactly its rounded size (else the best fit of the array
// and the ordered blocks together), as the CPU allocator's malloc hands
// out the chunk of that size freed last: a training step allocates and
// frees the same sizes over and over, the block freed last is the one
// still in the host's caches, and the array is, where a walk down the
// ordered set took a cache miss a level. A block pushed out of the array
// joins the ordered set; empty_cache() releases both.
constexpr std::size_t kRecentBlocks = 16;
struct RecentBlock {
  c10::StreamId stream;
  std::size_t size;
  Block* block;
};

struct PendingFree {
  Block* block;
  std::vector<accEvent_t> events;
};

// Note [Graph memory pools].
struct PrivatePool {
  int use_count = 0;  // graphs (and captures) holding the pool
  std::set<std::pair<std::size_t, void*>> free_blocks;
};

struct DeviceState {
  std::set<FreeKey> free_blocks;
  // Nodes of free_blocks taken out by allocations, put back by the frees
  // that follow: a small allocation and its free make no heap allocation
  // of their own for the cache's bookkeeping.
  std::vector<std::set<FreeKey>::node_type> spare_nodes;
  // Note [Recently freed blocks]: the first recent_count, newest last.
  std::array<RecentBlock, kRecentBlocks> recent{};
  std::size_t recent_count = 0;
  std::map<c10::MempoolId_t, PrivatePool> pools;
  // Captures in progress: the driver's capture id, and the pool they fill.
  std::vector<std::pair<unsigned long long, c10::MempoolId_t>> captures;
  std::vector<PendingFree> pending;
  DeviceStats stats;
  std::deque<MemoryTraceEntry> trace;  // Note [Memory history]
};

using Action = MemoryTraceEntry::Action;

std::int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Whether a block of `block_size` bytes counts in the small pool.
bool inSmallPool(std::size_t block_size) {
  return block_size <= tuning().device_allocator.small_block_bytes;
}

// The pool a block of `block_size` bytes counts in.
StatType poolStat(std::size_t block_size) {
  return inSmallPool(block_size) ? StatType::SMALL_POOL : StatType::LARGE_POOL;
}

// `stat`'s aggregate and `pool` entries, by `amount`.
void updateStat(StatArray& stat, StatType pool, std::size_t amount,
                bool increase) {
  for (const auto type : {StatType::AGGREGATE, pool}) {
    Stat& s = stat[static_cast<std::size_t>(type)];
    if (increase) {
      s.increase(amount);
    } else {
      s.decrease(amount);
    }
  }
}

void updateStat(StatArray& stat, std::size_t block_size, std::size_t amount,
                bool increase) {
  updateStat(stat, poolStat(block_size), amount, increase);
}

// The stats a block moves as its user takes and frees it: the allocation,
// its bytes and the bytes asked for.
void countAllocated(DeviceStats& stats, std::size_t block_size,
                    std::size_t requested, bool increase) {
  const StatType pool = poolStat(block_size);
  updateStat(stats.allocation, pool, 1, increase);
  updateStat(stats.allocated_bytes, pool, block_size, increase);
  updateStat(stats.requested_bytes, pool, requested, increase);
}

// The stats a block moves as it leaves the cache and returns to it. As in
// CUDA's allocator, a block freed while other streams still use it
// (recordStream) is no longer allocated but still active until they are
// done; otherwise a block is active exactly while it is allocated (blocks
// are never split).
void countActive(DeviceStats& stats, std::size_t block_size, bool increase) {
  const StatType pool = poolStat(block_size);
  updateStat(stats.active, pool, 1, increase);
  updateStat(stats.active_bytes, pool, block_size, increase);
}

// Calls `fn` on every Stat of every StatArray of `stats`.
template <class Fn>
void forEachStat(DeviceStats& stats, Fn fn) {
  for (StatArray* array :
       {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split,
        &stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
        &stats.inactive_split_bytes, &stats.requested_bytes}) {
    for (Stat& stat : *array) {
      fn(stat);
    }
  }
}

void deleteBlock(void* ptr);

class CachingAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(std::size_t nbytes) override {
    const c10::DeviceIndex device = currentDevice();
    const c10::Device torch_device(kDeviceType, device);
    if (nbytes == 0) {
      return {nullptr, nullptr, &deleteBlock, torch_device};
    }
    // A negative size cast to size_t (untyped_storage().resize_(-1)): refused
    // before any arithmetic on it, which would wrap (as the CPU allocator
    // refuses it).
    TORCH_CHECK(static_cast<std::ptrdiff_t>(nbytes) >= 0, kDeviceName,
                " allocator: a negative size, ",
                static_cast<std::ptrdiff_t>(nbytes), " bytes");
    const std::size_t size = roundUp(nbytes);
    const c10::Stream current = getCurrentStream(device);
    const c10::StreamId stream = current.id();
    const auto context = gatherContext();
    const c10::MempoolId_t pool = capturePool(device, current);
    Block* block = takeCachedBlock(device, stream, pool, size, nbytes, context);
    if (block == nullptr) {
      block = allocateFromDriver(device, stream, pool, size, nbytes, context);
    }
    reportToProfiler(block->ptr, static_cast<std::int64_t>(block->size),
                     device);
    return {block->ptr, block->ptr, &deleteBlock, torch_device};
  }

  // Note [Graph memory pools]: allocations of the capture `capture_id` on
  // `device` come from `pool` until endAllocateToPool.
  void beginAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t pool,
                           unsigned long long capture_id) {
    const std::lock_guard<std::mutex> lock(mutex_);
    DeviceState& device_state = state(device);
    ++device_state.pools[pool].use_count;
    device_state.captures.emplace_back(capture_id, pool);
    captures_.fetch_add(1, std::memory_order_acq_rel);
  }

  void endAllocateToPool(c10::DeviceIndex device,
                         unsigned long long capture_id) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto& captures = state(device).captures;
    const auto it = std::find_if(
        captures.begin(), captures.end(),
        [&](const auto& entry) { return entry.first == capture_id; });
    if (it != captures.end()) {
      captures.erase(it);
      captures_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  // A graph lets go of `pool`; the last one hands its free blocks to the
  // ordinary cache.
  void releasePool(c10::DeviceIndex device, c10::MempoolId_t pool) {
    const std::lock_guard<std::mutex> lock(mutex_);
    DeviceState& device_state = state(device);
    const auto it = device_state.pools.find(pool);
    if (it == device_state.pools.end() || --it->second.use_count > 0) {
      return;
    }
    for (const auto& [size, ptr] : it->second.free_blocks) {
      Block& block = blocks_.at(ptr);
      block.pool = {0, 0};
      cacheFree(device_state, FreeKey{block.stream, block.size, &block});
    }
    device_state.pools.erase(it);
  }

  // Note [Memory history].
  void recordHistory(bool enabled, bool stacks, std::size_t max_entries) {
    const std::lock_guard<std::mutex> lock(mutex_);
    history_stacks_.store(enabled && stacks, std::memory_order_relaxed);
    max_entries_ = std::max<std::size_t>(max_entries, 1);
    history_.store(enabled, std::memory_order_relaxed);
    if (devices_.empty()) {
      state(0);
    }
    for (DeviceState& device_state : devices_) {
      if (!enabled) {
        device_state.trace.clear();
      }
      while (device_state.trace.size() > max_entries_) {
        device_state.trace.pop_front();
      }
    }
    if (!enabled) {
      for (auto& [ptr, block] : blocks_) {
        block.context.reset();
      }
    }
  }

  MemorySnapshot snapshot() {
    const std::lock_guard<std::mutex> lock(mutex_);
    MemorySnapshot result;
    std::set<const Block*> pending;
    for (DeviceState& device_state : devices_) {
      for (const PendingFree& p : device_state.pending) {
        pending.insert(p.block);
      }
      result.traces.emplace_back(device_state.trace.begin(),
                                 device_state.trace.end());
    }
    for (const auto& [ptr, block] : blocks_) {
      MemorySegment segment;
      segment.device = block.device;
      segment.address = reinterpret_cast<std::uintptr_t>(block.ptr);
      segment.size = block.size;
      segment.requested = block.requested;
      segment.stream = block.stream;
      segment.small = inSmallPool(block.size);
      segment.pool = block.pool;
      segment.state = pending.count(&block)
                          ? MemorySegment::State::kActivePendingFree
                      : block.allocated ? MemorySegment::State::kActiveAllocated
                                        : MemorySegment::State::kInactive;
      segment.context = block.context;
      result.segments.push_back(std::move(segment));
    }
    std::sort(result.segments.begin(), result.segments.end(),
              [](const MemorySegment& a, const MemorySegment& b) {
                return std::tie(a.device, a.address) <
                       std::tie(b.device, b.address);
              });
    return result;
  }

  c10::DeleterFnPtr raw_deleter() const override { return &deleteBlock; }

  void copy_data(void* dest, const void* src,
                 std::size_t count) const override {
    if (count == 0) {
      return;
    }
    // On the current stream, so the copy is ordered after pending kernels.
    accStream_t stream = currentNativeStream();
    ACCGEN_CHECK(
        accMemcpyAsync(dest, src, count, accMemcpyDeviceToDevice, stream));
    ACCGEN_CHECK(accStreamSynchronize(stream));
  }

  bool initialized() override { return true; }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    const c10::DeviceIndex count = deviceCount();
    for (c10::DeviceIndex device = 0; device < count; ++device) {
      releaseCachedBlocks(device);
    }
  }

  // Whether `ptr` is the address of one of this allocator's blocks.
  bool owns(void* ptr) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return blocks_.find(ptr) != blocks_.end();
  }

  void recordStream(const c10::DataPtr& data_ptr, c10::Stream stream) override {
    void* ptr = data_ptr.get_context();
    if (ptr == nullptr || data_ptr.get_deleter() != &deleteBlock) {
      return;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = blocks_.find(ptr);
    TORCH_CHECK(it != blocks_.end(), "recordStream: pointer not from the ",
                kDeviceName, " allocator");
    Block& block = it->second;
    if (stream.device_index() == block.device && stream.id() == block.stream) {
      return;
    }
    if (std::find(block.stream_uses.begin(), block.stream_uses.end(), stream) ==
        block.stream_uses.end()) {
      block.stream_uses.push_back(stream);
    }
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    checkDeviceIndex(device);
    const std::lock_guard<std::mutex> lock(mutex_);
    return state(device).stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    checkDeviceIndex(device);
    const std::lock_guard<std::mutex> lock(mutex_);
    DeviceStats& stats = state(device).stats;
    forEachStat(stats, [](Stat& stat) { stat.reset_accumulated(); });
    stats.num_alloc_retries = 0;
    stats.num_ooms = 0;
    stats.num_device_alloc = 0;
    stats.num_device_free = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    checkDeviceIndex(device);
    const std::lock_guard<std::mutex> lock(mutex_);
    forEachStat(state(device).stats, [](Stat& stat) { stat.reset_peak(); });
  }

  std::pair<std::size_t, std::size_t> getMemoryInfo(
      c10::DeviceIndex device) override {
    const c10::DeviceGuard guard(
        c10::Device(kDeviceType, resolveDevice(device)));
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    ACCGEN_CHECK(accMemGetInfo(&free_bytes, &total_bytes));
    return {free_bytes, total_bytes};
  }

  // Without caching (RuntimeTuning::DeviceAllocator::caching), a freed
  // block goes back to the driver at once.
  void free(void* ptr) {
    const auto [device, size] = freeBlock(ptr);
    reportToProfiler(ptr, -static_cast<std::int64_t>(size), device);
    if (!tuning().device_allocator.caching) {
      try {
        releaseCachedBlocks(device);
      } catch (const c10::Error&) {
        // Deleters must not throw: the block stays cached until the next
        // empty_cache() or out-of-memory retry.
      }
    }
  }

 private:
  // The pool of the capture `stream` takes part in, {0, 0} when it does not
  // capture (Note [Graph memory pools]). One atomic load while no capture
  // is in progress.
  c10::MempoolId_t capturePool(c10::DeviceIndex device,
                               const c10::Stream& stream) {
    if (captures_.load(std::memory_order_acquire) == 0) {
      return {0, 0};
    }
    accStreamCaptureStatus status = accStreamCaptureStatusNone;
    unsigned long long id = 0;
    if (accStreamGetCaptureInfo(nativeStream(stream), &status, &id) !=
            accSuccess ||
        status == accStreamCaptureStatusNone) {
      return {0, 0};
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [capture, pool] : state(device).captures) {
      if (capture == id) {
        return pool;
      }
    }
    return {0, 0};
  }

  // The stack of the current call, when the history keeps stacks (Note
  // [Memory history]); gathered without mutex_.
  std::shared_ptr<c10::GatheredContext> gatherContext() const {
    if (!history_stacks_.load(std::memory_order_relaxed)) {
      return nullptr;
    }
    return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true,
                                            /*cpp=*/false);
  }

  // Requires mutex_.
  void record(c10::DeviceIndex device, Action action, const void* ptr,
              std::size_t size, c10::StreamId stream,
              std::shared_ptr<c10::GatheredContext> context,
              std::size_t device_free = 0) {
    if (!history_.load(std::memory_order_relaxed)) {
      return;
    }
    auto& trace = state(device).trace;
    if (trace.size() >= max_entries_) {
      trace.pop_front();
    }
    MemoryTraceEntry entry;
    entry.action = action;
    entry.addr = reinterpret_cast<std::uintptr_t>(ptr);
    entry.size = size;
    entry.stream = stream;
    entry.time_us = nowUs();
    entry.device_free = device_free;
    entry.context = std::move(context);
    trace.push_back(std::move(entry));
  }

  // Tells the profiler, when it records memory, of `delta` bytes at `ptr`
  // (Note [Memory history]).
  void reportToProfiler(void* ptr, std::int64_t delta,
                        c10::DeviceIndex device) {
    if (!c10::memoryProfilingEnabled()) {
      return;
    }
    std::size_t allocated = 0;
    std::size_t reserved = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      const DeviceStats& stats = state(device).stats;
      allocated = static_cast<std::size_t>(stats.allocated_bytes[0].current);
      reserved = static_cast<std::size_t>(stats.reserved_bytes[0].current);
    }
    c10::reportMemoryUsageToProfiler(ptr, delta, allocated, reserved,
                                     c10::Device(kDeviceType, device));
  }

  // Returns the block to the cache (or to the pending list while other
  // streams may use it); the device it was on and its size.
  std::pair<c10::DeviceIndex, std::size_t> freeBlock(void* ptr) {
    const auto context = gatherContext();
    std::unique_lock<std::mutex> lock(mutex_);
    const auto it = blocks_.find(ptr);
    TORCH_INTERNAL_ASSERT(it != blocks_.end(), kDeviceName,
                          ": freeing an unknown pointer");
    Block* block = &it->second;
    const std::size_t size = block->size;
    record(block->device, Action::kFreeRequested, ptr, size, block->stream,
           context);
    countAllocated(state(block->device).stats, size, block->requested, false);
    block->requested = 0;
    if (block->stream_uses.empty()) {
      markFree(*block, context);
      return {block->device, size};
    }
    std::vector<c10::Stream> uses = std::move(block->stream_uses);
    block->stream_uses.clear();
    lock.unlock();
    std::vector<accEvent_t> events;
    try {
      for (const c10::Stream& use : uses) {
        const c10::DeviceGuard guard(use.device());
        accEvent_t event = nullptr;
        ACCGEN_CHECK(accEventCreateWithFlags(&event, accEventDisableTiming));
        events.push_back(event);
        ACCGEN_CHECK(accEventRecord(event, nativeStream(use)));
      }
    } catch (const c10::Error&) {
      // Deleters must not throw: fall back to waiting for the streams now.
      for (accEvent_t event : events) {
        (void)accEventDestroy(event);
      }
      events.clear();
      for (const c10::Stream& use : uses) {
        try {
          (void)accStreamSynchronize(nativeStream(use));
        } catch (const c10::Error&) {
        }
      }
    }
    lock.lock();
    if (events.empty()) {
      markFree(*block, context);
    } else {
      state(block->device).pending.push_back({block, std::move(events)});
    }
    return {block->device, size};
  }

  DeviceState& state(c10::DeviceIndex device) {
    if (devices_.empty()) {
      // Made once, in place: DeviceState is not copyable.
      devices_ = std::vector<DeviceState>(
          std::max<c10::DeviceIndex>(deviceCount(), 1));
    }
    return devices_[device];
  }

  // Requires mutex_. Moves blocks whose cross-stream uses completed into the
  // cache; with `wait`, waits for them first.
  void processPending(c10::DeviceIndex device, bool wait) {
    auto& pending = state(device).pending;
    for (auto it = pending.begin(); it != pending.end();) {
      bool done = true;
      for (accEvent_t event : it->events) {
        const accError_t error =
            wait ? accEventSynchronize(event) : accEventQuery(event);
        if (error == accErrorNotReady) {
          done = false;
          break;
        }
      }
      if (!done) {
        ++it;
        continue;
      }
      for (accEvent_t event : it->events) {
        (void)accEventDestroy(event);
      }
      markFree(*it->block, nullptr);
      it = pending.erase(it);
    }
  }

  // Requires mutex_.
  void markFree(Block& block, std::shared_ptr<c10::GatheredContext> context) {
    record(block.device, Action::kFreeCompleted, block.ptr, block.size,
           block.stream, std::move(context));
    countActive(state(block.device).stats, block.size, false);
    block.allocated = false;
    DeviceState& device_state = state(block.device);
    if (block.pool != c10::MempoolId_t{0, 0}) {
      const auto pool = device_state.pools.find(block.pool);
      if (pool != device_state.pools.end()) {
        pool->second.free_blocks.emplace(block.size, block.ptr);
        return;
      }
      block.pool = {0, 0};  // the pool was released meanwhile
    }
    cacheRecent(device_state, block);
  }

  // Requires mutex_. Note [Recently freed blocks]: `block` becomes the
  // newest recent block; the oldest joins the ordered free blocks when the
  // array is full.
  static void cacheRecent(DeviceState& device_state, Block& block) {
    auto& recent = device_state.recent;
    if (device_state.recent_count == kRecentBlocks) {
      const RecentBlock oldest = recent[0];
      cacheFree(device_state,
                FreeKey{oldest.stream, oldest.size, oldest.block});
      std::move(recent.begin() + 1, recent.end(), recent.begin());
      --device_state.recent_count;
    }
    recent[device_state.recent_count++] = {block.stream, block.size, &block};
  }

  // Requires mutex_. Moves the recent blocks into the ordered free blocks.
  static void flushRecent(DeviceState& device_state) {
    for (std::size_t i = 0; i < device_state.recent_count; ++i) {
      const RecentBlock& r = device_state.recent[i];
      cacheFree(device_state, FreeKey{r.stream, r.size, r.block});
    }
    device_state.recent_count = 0;
  }

  // Requires mutex_. Puts `key` in the device's free blocks, in a spare node
  // when there is one.
  static void cacheFree(DeviceState& device_state, const FreeKey& key) {
    if (device_state.spare_nodes.empty()) {
      device_state.free_blocks.insert(key);
      return;
    }
    auto node = std::move(device_state.spare_nodes.back());
    device_state.spare_nodes.pop_back();
    node.value() = key;
    device_state.free_blocks.insert(std::move(node));
  }

  // Requires mutex_. Takes `it` out of the device's free blocks, keeping
  // its node for the next free (at most kSpareNodes of them).
  static void uncacheFree(DeviceState& device_state,
                          std::set<FreeKey>::iterator it) {
    static constexpr std::size_t kSpareNodes = 64;
    if (device_state.spare_nodes.size() < kSpareNodes) {
      // Room first: a push_back that threw after the extract would drop the
      // block from the index, which then never frees it.
      device_state.spare_nodes.reserve(kSpareNodes);
      device_state.spare_nodes.push_back(device_state.free_blocks.extract(it));
    } else {
      device_state.free_blocks.erase(it);
    }
  }

  // Requires mutex_.
  void markAllocated(Block& block, std::size_t requested,
                     const std::shared_ptr<c10::GatheredContext>& context) {
    record(block.device, Action::kAlloc, block.ptr, block.size, block.stream,
           context);
    block.allocated = true;
    block.requested = requested;
    block.context = context;
    DeviceStats& stats = state(block.device).stats;
    countAllocated(stats, block.size, requested, true);
    countActive(stats, block.size, true);
  }

  Block* takeCachedBlock(c10::DeviceIndex device, c10::StreamId stream,
                         c10::MempoolId_t pool, std::size_t size,
                         std::size_t requested,
                         const std::shared_ptr<c10::GatheredContext>& context) {
    const std::lock_guard<std::mutex> lock(mutex_);
    processPending(device, /*wait=*/false);
    if (pool != c10::MempoolId_t{0, 0}) {
      auto& pool_free = state(device).pools[pool].free_blocks;
      const auto it = pool_free.lower_bound({size, nullptr});
      if (it == pool_free.end() ||
          it->first > tuning().device_allocator.reuse_ratio * size) {
        return nullptr;
      }
      Block* block = &blocks_.at(it->second);
      pool_free.erase(it);
      markAllocated(*block, requested, context);
      return block;
    }
    DeviceState& device_state = state(device);
    const std::size_t reuse_ratio = tuning().device_allocator.reuse_ratio;
    // Note [Recently freed blocks]: the newest exact fit, else the best fit
    // of the recent blocks, against the best fit of the ordered ones.
    auto& recent = device_state.recent;
    std::size_t best = kRecentBlocks;
    for (std::size_t i = device_state.recent_count; i-- > 0;) {
      const RecentBlock& r = recent[i];
      if (r.stream != stream || r.size < size) {
        continue;
      }
      if (best == kRecentBlocks || r.size < recent[best].size) {
        best = i;
        if (r.size == size) {
          break;
        }
      }
    }
    Block* block = nullptr;
    const bool recent_fits =
        best != kRecentBlocks && recent[best].size <= reuse_ratio * size;
    if (recent_fits && recent[best].size == size) {
      block = recent[best].block;
    } else {
      auto& free_blocks = device_state.free_blocks;
      const auto it = free_blocks.lower_bound({stream, size, nullptr});
      const bool ordered_fits = it != free_blocks.end() &&
                                std::get<0>(*it) == stream &&
                                std::get<1>(*it) <= reuse_ratio * size;
      if (ordered_fits &&
          (!recent_fits || std::get<1>(*it) < recent[best].size)) {
        block = std::get<2>(*it);
        uncacheFree(device_state, it);
        markAllocated(*block, requested, context);
        return block;
      }
      if (!recent_fits) {
        return nullptr;
      }
      block = recent[best].block;
    }
    std::move(
        recent.begin() + static_cast<std::ptrdiff_t>(best) + 1,
        recent.begin() + static_cast<std::ptrdiff_t>(device_state.recent_count),
        recent.begin() + static_cast<std::ptrdiff_t>(best));
    --device_state.recent_count;
    markAllocated(*block, requested, context);
    return block;
  }

 public:
  // Note [Kernel results in device memory]: a block for the CPU kernel
  // running as a device kernel on `stream`, or null, and then the CPU
  // allocator serves. It waits for nothing and releases nothing (the
  // driver's frees drain the device, which runs this very kernel), and it
  // gathers no stack (the kernel may run on the stream's worker thread,
  // whose Python stack is not the caller's).
  Block* allocateForKernel(c10::DeviceIndex device, c10::StreamId stream,
                           std::size_t nbytes) {
    const std::size_t size = roundUp(nbytes);
    Block* block =
        takeCachedBlock(device, stream, {0, 0}, size, nbytes, nullptr);
    if (block == nullptr) {
      void* ptr = nullptr;
      const c10::DeviceGuard guard(c10::Device(kDeviceType, device));
      if (accMalloc(&ptr, size) != accSuccess) {
        return nullptr;
      }
      block =
          addDriverBlock(ptr, device, stream, {0, 0}, size, nbytes, nullptr);
    }
    // The kernel running on this thread may touch the block (an emulator
    // that guards device memory would refuse it otherwise).
    if (accKernelAddBuffer(block->ptr) != accSuccess) {
      free(block->ptr);
      return nullptr;
    }
    reportToProfiler(block->ptr, static_cast<std::int64_t>(block->size),
                     device);
    return block;
  }

 private:
  // --8<-- [start:allocate-from-driver]
  Block* allocateFromDriver(
      c10::DeviceIndex device, c10::StreamId stream, c10::MempoolId_t pool,
      std::size_t size, std::size_t requested,
      const std::shared_ptr<c10::GatheredContext>& context) {
    void* ptr = nullptr;
    accError_t error = accMalloc(&ptr, size);
    if (error == accErrorMemoryAllocation) {
      releaseCachedBlocks(device);
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        ++state(device).stats.num_alloc_retries;
      }
      error = accMalloc(&ptr, size);
    }
    if (error == accErrorMemoryAllocation) {
      throwOutOfMemory(device, stream, requested, context);
    }
    if (error != accSuccess) {
      detail::throwDriverError(error, "accMalloc(&ptr, size)", __FILE__,
                               __LINE__, __func__);
    }
    // --8<-- [end:allocate-from-driver]
    return addDriverBlock(ptr, device, stream, pool, size, requested, context);
  }

  // A block for `ptr`, fresh from the driver, allocated to its caller.
  Block* addDriverBlock(void* ptr, c10::DeviceIndex device,
                        c10::StreamId stream, c10::MempoolId_t pool,
                        std::size_t size, std::size_t requested,
                        const std::shared_ptr<c10::GatheredContext>& context) {
    const std::lock_guard<std::mutex> lock(mutex_);
    Block* block = &blocks_[ptr];
    block->ptr = ptr;
    block->size = size;
    block->device = device;
    block->stream = stream;
    block->pool = pool;
    DeviceStats& stats = state(device).stats;
    updateStat(stats.segment, size, 1, true);
    updateStat(stats.reserved_bytes, size, size, true);
    ++stats.num_device_alloc;
    record(device, Action::kSegmentAlloc, ptr, size, stream, context);
    markAllocated(*block, requested, context);
    return block;
  }

  [[noreturn]] void throwOutOfMemory(
      c10::DeviceIndex device, c10::StreamId stream, std::size_t requested,
      const std::shared_ptr<c10::GatheredContext>& context) {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    (void)accMemGetInfo(&free_bytes, &total_bytes);
    std::int64_t allocated = 0;
    std::int64_t reserved = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      DeviceStats& stats = state(device).stats;
      ++stats.num_ooms;
      allocated = stats.allocated_bytes[0].current;
      reserved = stats.reserved_bytes[0].current;
      record(device, Action::kOom, nullptr, requested, stream, context,
             free_bytes);
    }
    if (c10::memoryProfilingEnabled()) {
      c10::reportOutOfMemoryToProfiler(static_cast<std::int64_t>(requested),
                                       static_cast<std::size_t>(allocated),
                                       static_cast<std::size_t>(reserved),
                                       c10::Device(kDeviceType, device));
    }
    TORCH_CHECK_WITH(
        OutOfMemoryError, false, kDeviceName,
        " out of memory. Tried to allocate ", formatBytes(requested),
        " on device ", static_cast<int>(device),
        ", which has a total capacity of ", formatBytes(total_bytes),
        " of which ", formatBytes(free_bytes),
        " is free. Of the memory in use, ", formatBytes(allocated),
        " is allocated by PyTorch and ", formatBytes(reserved - allocated),
        " is reserved by PyTorch but unallocated.");
  }

  // Returns the device's cached blocks to the driver. The driver calls run
  // without mutex_: accFree waits for the device, and the work it waits for
  // may free tensors itself.
  void releaseCachedBlocks(c10::DeviceIndex device) {
    std::vector<void*> released;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      processPending(device, /*wait=*/true);
      DeviceState& device_state = state(device);
      flushRecent(device_state);
      for (const FreeKey& key : device_state.free_blocks) {
        const auto it = blocks_.find(std::get<2>(key)->ptr);
        Block& block = it->second;
        updateStat(device_state.stats.segment, block.size, 1, false);
        updateStat(device_state.stats.reserved_bytes, block.size, block.size,
                   false);
        ++device_state.stats.num_device_free;
        record(device, Action::kSegmentFree, block.ptr, block.size,
               block.stream, nullptr);
        released.push_back(block.ptr);
        blocks_.erase(it);
      }
      device_state.free_blocks.clear();
    }
    if (released.empty()) {
      return;
    }
    const c10::DeviceGuard guard(c10::Device(kDeviceType, device));
    for (void* ptr : released) {
      ACCGEN_CHECK(accFree(ptr));
    }
  }

  std::mutex mutex_;
  // Every block, by its address. The block lives in the map's node (whose
  // address is stable): a free finds the block and its fields in one place.
  std::unordered_map<void*, Block> blocks_;
  std::vector<DeviceState> devices_;
  // Note [Memory history]: written under mutex_, read without it.
  std::atomic<bool> history_{false};
  std::atomic<bool> history_stacks_{false};
  std::size_t max_entries_ = 1;
  // Captures in progress on any device (Note [Graph memory pools]).
  std::atomic<int> captures_{0};
};

// Never destroyed: tensors may outlive static destruction at process exit.
// Made on first use, since registration may ask for it during the static
// initialisation of another translation unit.
CachingAllocator* deviceAllocator() {
  static CachingAllocator* const allocator = new CachingAllocator();
  return allocator;
}

void deleteBlock(void* ptr) {
  if (ptr != nullptr) {
    deviceAllocator()->free(ptr);
  }
}

// Note [Kernel results in device memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A CPU kernel that runs on host aliases of device tensors (rule 3 of Note
// [How an emulated operator runs], the hook operators) allocates its new
// results through the CPU allocator. While it runs as a device kernel, the
// CPU allocator of the process serves those allocations from the device's
// caching allocator, on the kernel's device and stream: the results are
// then already in device memory, and the engine takes their blocks over
// (takeDeviceBlock) instead of copying them. The blocks are CPU-typed
// while the kernel holds them (a CPU tensor's storage must say CPU), and
// ordinary CPU memory serves whenever the device allocator cannot (a full
// device), so a result is copied as before then. The kernel's
// temporaries come from the device too, and go back to its cache on the
// kernel's stream, which is the order CUDA's allocator keeps for its
// kernels' workspaces.
thread_local const detail::KernelResultsPlace* tls_kernel_place = nullptr;

class KernelResultsAllocator final : public c10::Allocator {
 public:
  explicit KernelResultsAllocator(c10::Allocator* cpu) : cpu_(cpu) {}

  c10::DataPtr allocate(std::size_t nbytes) override {
    const detail::KernelResultsPlace* place = tls_kernel_place;
    if (place != nullptr && static_cast<std::ptrdiff_t>(nbytes) > 0) {
      if (Block* block = deviceAllocator()->allocateForKernel(
              place->device, place->stream, nbytes)) {
        return {block->ptr, block->ptr, &deleteBlock, c10::Device(c10::kCPU)};
      }
    }
    return cpu_->allocate(nbytes);
  }

  // raw_allocate() within a kernel hands out a device block too; its
  // raw_deallocate() comes here.
  c10::DeleterFnPtr raw_deleter() const override {
    return g_cpu_raw_deleter == nullptr ? nullptr : &rawDelete;
  }

  void copy_data(void* dest, const void* src,
                 std::size_t count) const override {
    cpu_->copy_data(dest, src, count);
  }

 private:
  static void rawDelete(void* ptr) {
    if (deviceAllocator()->owns(ptr)) {
      deleteBlock(ptr);
    } else {
      g_cpu_raw_deleter(ptr);
    }
  }

  c10::Allocator* const cpu_;

 public:
  static inline c10::DeleterFnPtr g_cpu_raw_deleter = nullptr;
};

}  // namespace

namespace detail {

KernelResultsPlace KernelResultsPlace::of(c10::DeviceIndex device) {
  return {device, getCurrentStream(device).id()};
}

KernelAllocations::KernelAllocations(const KernelResultsPlace* place)
    : previous_(tls_kernel_place) {
  // Note [Host access]: where the host cannot address device memory, the
  // CPU kernel runs on host copies, outside any device kernel, and its
  // results stay in CPU memory.
  tls_kernel_place = hostComputes() ? place : nullptr;
}

KernelAllocations::~KernelAllocations() {
  tls_kernel_place = previous_;
}

void installKernelResultsAllocator() {
  // Made once, in front of the CPU allocator torch had then.
  static KernelResultsAllocator* const allocator = [] {
    c10::Allocator* cpu = c10::GetAllocator(c10::kCPU);
    KernelResultsAllocator::g_cpu_raw_deleter = cpu->raw_deleter();
    return new KernelResultsAllocator(cpu);
  }();
  c10::SetAllocator(c10::kCPU, allocator);
}

c10::Storage takeDeviceBlock(c10::StorageImpl& host, c10::Device device) {
  const c10::DataPtr& data = host.data_ptr();
  if (data.get_deleter() != &deleteBlock || data.get() == nullptr ||
      data.get() != data.get_context()) {
    return {};
  }
  // The host storage keeps the address without owning it, like a host
  // alias, and the device storage owns the block.
  void* ptr = data.get();
  c10::DataPtr owned =
      host.set_data_ptr(c10::DataPtr(ptr, c10::Device(c10::kCPU)));
  c10::DataPtr moved(ptr, owned.release_context(), &deleteBlock, device);
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), host.nbytes(), std::move(moved),
      deviceAllocator(), /*resizable=*/true));
}

}  // namespace detail

c10::DeviceAllocator* getDeviceAllocator() {
  return deviceAllocator();
}

c10::Allocator* getTensorAllocator() {
  return deviceAllocator();
}

void recordStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) {
  deviceAllocator()->recordStream(data_ptr, stream);
}

void recordMemoryHistory(bool enabled, bool stacks, std::size_t max_entries) {
  deviceAllocator()->recordHistory(enabled, stacks, max_entries);
}

MemorySnapshot memorySnapshot() {
  return deviceAllocator()->snapshot();
}

void beginAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t pool,
                         unsigned long long capture_id) {
  deviceAllocator()->beginAllocateToPool(device, pool, capture_id);
}

void endAllocateToPool(c10::DeviceIndex device, unsigned long long capture_id) {
  deviceAllocator()->endAllocateToPool(device, capture_id);
}

void releasePool(c10::DeviceIndex device, c10::MempoolId_t pool) {
  deviceAllocator()->releasePool(device, pool);
}

// --8<-- [start:resize-storage]
void resizeStorageBytes(c10::StorageImpl* storage, std::size_t size_bytes) {
  TORCH_CHECK(storage->resizable(),
              "Trying to resize storage that is not resizable");
  c10::Allocator* allocator = storage->allocator();
  TORCH_CHECK(allocator != nullptr,
              "Trying to resize storage without an allocator");
  const c10::DeviceGuard guard(storage->device());
  c10::DataPtr data = allocator->allocate(size_bytes);
  const std::size_t keep = std::min(storage->nbytes(), size_bytes);
  if (keep > 0) {
    // Ordered on the current stream; the old block goes back to the cache
    // for that same stream, so nothing reuses it before the copy ran.
    ACCGEN_CHECK(accMemcpyAsync(data.get(), storage->data(), keep,
                                accMemcpyDeviceToDevice,
                                currentNativeStream()));
  }
  storage->set_data_ptr_noswap(std::move(data));
  storage->set_nbytes(size_bytes);
}
// --8<-- [end:resize-storage]

}  // namespace accgen::runtime
