// Pinned host memory for the device: a caching allocator over accMallocHost,
// registered as the PrivateUse1 host allocator. tensor.pin_memory(),
// torch.empty(..., pin_memory=True) and DataLoader(pin_memory=True) reach it
// through the hooks' getPinnedMemoryAllocator(); torch.accelerator's
// empty_host_cache() and host statistics through at::getHostAllocator().
// Freed blocks are cached by size; a block used by a copy on some stream
// (record_event) is only reused once that stream has caught up.
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Runtime.h"
#include "accgen/runtime/Tuning.h"

namespace accgen::runtime {
namespace {

struct HostBlock {
  std::size_t size = 0;
  bool allocated = false;
  std::vector<c10::Stream> stream_uses;
};

void deletePinned(void* ptr);

class PinnedAllocator final : public at::HostAllocator {
 public:
  at::DataPtr allocate(std::size_t nbytes) override {
    if (nbytes == 0) {
      return {nullptr, nullptr, &deletePinned, c10::Device(c10::kCPU)};
    }
    const std::size_t round = tuning().host_allocator.round_bytes;
    const std::size_t size = (nbytes + round - 1) / round * round;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      const auto it = free_.lower_bound(size);
      if (it != free_.end() && it->first <= 2 * size) {
        void* ptr = it->second;
        free_.erase(it);
        HostBlock& block = blocks_.at(ptr);
        block.allocated = true;
        stats_.active_requests.increase(1);
        stats_.active_bytes.increase(block.size);
        return {ptr, ptr, &deletePinned, c10::Device(c10::kCPU)};
      }
    }
    initDriver();
    void* ptr = nullptr;
    accError_t error = accMallocHost(&ptr, size);
    if (error == accErrorMemoryAllocation) {
      empty_cache();
      error = accMallocHost(&ptr, size);
    }
    if (error != accSuccess) {
      detail::throwDriverError(error, "accMallocHost(&ptr, size)", __FILE__,
                               __LINE__, __func__);
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    HostBlock& block = blocks_[ptr];
    block.size = size;
    block.allocated = true;
    ++stats_.num_host_alloc;
    stats_.allocations.increase(1);
    stats_.allocated_bytes.increase(size);
    stats_.active_requests.increase(1);
    stats_.active_bytes.increase(size);
    return {ptr, ptr, &deletePinned, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &deletePinned; }

  void copy_data(void* dest, const void* src,
                 std::size_t count) const override {
    if (count > 0) {
      ACCGEN_CHECK(accMemcpy(dest, src, count, accMemcpyHostToHost));
    }
  }

  bool record_event(void* ptr, void* ctx, c10::Stream stream) override {
    (void)ptr;
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = blocks_.find(ctx);
    if (it == blocks_.end()) {
      return false;
    }
    it->second.stream_uses.push_back(stream);
    return true;
  }

  void empty_cache() override {
    std::vector<void*> released;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [size, ptr] : free_) {
        released.push_back(ptr);
        blocks_.erase(ptr);
        ++stats_.num_host_free;
        stats_.allocations.decrease(1);
        stats_.allocated_bytes.decrease(size);
      }
      free_.clear();
    }
    for (void* ptr : released) {
      ACCGEN_CHECK(accFreeHost(ptr));
    }
  }

  at::HostStats get_stats() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_accumulated_stats() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto* stat : {&stats_.active_requests, &stats_.active_bytes,
                       &stats_.allocations, &stats_.allocated_bytes}) {
      stat->reset_accumulated();
    }
    stats_.num_host_alloc = 0;
    stats_.num_host_free = 0;
  }

  void reset_peak_stats() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto* stat : {&stats_.active_requests, &stats_.active_bytes,
                       &stats_.allocations, &stats_.allocated_bytes}) {
      stat->reset_peak();
    }
  }

  void free(void* ptr) {
    std::vector<c10::Stream> uses;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      uses = std::move(blocks_.at(ptr).stream_uses);
    }
    // The copies that read or write this block must finish before anyone
    // else gets it.
    for (const c10::Stream& use : uses) {
      try {
        (void)accStreamSynchronize(nativeStream(use));
      } catch (const c10::Error&) {
      }
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    HostBlock& block = blocks_.at(ptr);
    block.allocated = false;
    block.stream_uses.clear();
    stats_.active_requests.decrease(1);
    stats_.active_bytes.decrease(block.size);
    free_.emplace(block.size, ptr);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, HostBlock> blocks_;
  std::multimap<std::size_t, void*> free_;
  at::HostStats stats_;
};

// Never destroyed: tensors may outlive static destruction at process exit.
// Made on first use, since registration may ask for it during the static
// initialisation of another translation unit.
PinnedAllocator* hostAllocator() {
  static PinnedAllocator* const allocator = new PinnedAllocator();
  return allocator;
}

void deletePinned(void* ptr) {
  if (ptr != nullptr) {
    hostAllocator()->free(ptr);
  }
}

}  // namespace

at::HostAllocator* getHostAllocator() {
  return hostAllocator();
}

c10::Allocator* getPinnedMemoryAllocator() {
  return hostAllocator();
}

bool isPinnedPtr(const void* ptr) {
  initDriver();
  if (ptr == nullptr) {
    return false;
  }
  accPointerAttributes attributes{};
  if (accPointerGetAttributes(&attributes, ptr) != accSuccess) {
    return false;
  }
  return attributes.type == accMemoryTypeHost;
}

}  // namespace accgen::runtime
