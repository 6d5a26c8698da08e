// Allocations the driver knows about (device memory and pinned host memory)
// and the table that resolves any pointer, including one into the middle of
// an allocation, to the allocation holding it.
//
// Device allocations each live in a page-aligned mapping of their own that is
// PROT_NONE while no work uses it; work takes access through AccessScope
// (Note [Device memory access] in allocation.cpp). Allocations are
// shared_ptr-owned: queued work keeps the allocations it touches alive, so
// memory freed while a copy or kernel on another device still uses it is
// unmapped only when that work finishes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include <tsl/robin_map.h>

#include "accgen/driver.h"

namespace accgen::emulator {

enum class MemoryKind { kDevice, kHost };

/// One allocation: its address range, owner and (for guarded device memory)
/// the count of work items that currently hold access to it.
class Allocation {
 public:
  /// Maps `size` bytes of device memory for `device` (PROT_NONE when
  /// `guarded`); nullptr when the mapping fails.
  static std::shared_ptr<Allocation> mapDevice(int device, size_t size,
                                               bool guarded);
  /// Allocates `size` bytes of ordinary host memory; nullptr on failure.
  static std::shared_ptr<Allocation> allocateHost(size_t size);

  ~Allocation();
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  MemoryKind kind() const { return kind_; }
  int device() const { return device_; }
  std::byte* base() const { return base_; }
  /// The size that was asked for (what capacity accounting counts).
  size_t size() const { return size_; }

  /// Grants access (read/write) for one more user; the first one unprotects
  /// the mapping. False if the kernel refused the protection change.
  bool acquire();
  /// Ends one user's access; the last one protects the mapping again.
  void release();

 private:
  Allocation(MemoryKind kind, int device, std::byte* base, size_t size,
             size_t mapped_size, bool guarded);

  const MemoryKind kind_;
  const int device_;
  std::byte* const base_;
  const size_t size_;
  const size_t mapped_size_;
  const bool guarded_;
  std::mutex access_mutex_;
  int access_count_ = 0;
};

using AllocationRef = std::shared_ptr<Allocation>;

/// Holds access to a set of allocations for the lifetime of the scope.
class AccessScope {
 public:
  AccessScope() = default;
  ~AccessScope();
  AccessScope(const AccessScope&) = delete;
  AccessScope& operator=(const AccessScope&) = delete;
  /// Acquires `allocation` (null is ignored); false if it could not be.
  bool add(Allocation* allocation);

 private:
  // Small inline storage: most work touches one to three allocations.
  static constexpr size_t kInline = 4;
  Allocation* inline_[kInline] = {};
  size_t count_ = 0;
  std::vector<Allocation*> overflow_;
};

/// The allocations one work item touches: up to kInline of them without a
/// heap allocation (most work touches one to three).
class AllocationRefs {
 public:
  void push_back(AllocationRef allocation);
  const AllocationRef* begin() const {
    return overflow_.empty() ? inline_.data() : overflow_.data();
  }
  const AllocationRef* end() const { return begin() + size_; }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kInline = 4;
  std::array<AllocationRef, kInline> inline_;
  std::vector<AllocationRef> overflow_;  // all of them, once past kInline
  size_t size_ = 0;
};

/// The ordered map of live allocations keyed by base address.
class AllocationTable {
 public:
  void insert(AllocationRef allocation);
  /// The allocation with base <= ptr < base + size, or null.
  AllocationRef find(const void* ptr) const;
  /// Like find, but a pointer one past the end also resolves (a zero-length
  /// view at the end of a buffer), unless another allocation starts there.
  AllocationRef findForKernel(const void* ptr) const;
  /// Resolves several pointers under one lock, a base address through the
  /// hash index (Note [Kernel buffer lookup]); false at the first unknown
  /// non-null pointer. Null pointers are skipped.
  bool findForKernel(const void* const* ptrs, size_t count,
                     AllocationRefs& out) const;
  /// findForKernel without the references, for work that runs before the
  /// launch returns, while its caller holds the buffers: the allocations of
  /// the non-null `ptrs`, in `out` (room for `count`), their number in
  /// `found`; false at the first unknown non-null pointer.
  bool resolveForKernel(const void* const* ptrs, size_t count, Allocation** out,
                        size_t& found) const;
  /// Whether kernel buffer `ptr` lies in an allocation, as findForKernel
  /// resolves it, without a reference.
  bool holdsKernelBuffer(const void* ptr) const;

  /// Where [ptr, ptr + count) lies.
  enum class Region {
    kUnregistered,  ///< entirely outside every allocation
    kInside,        ///< entirely inside `allocation`
    kStraddling,    ///< partly inside an allocation: always an error
  };
  Region classify(const void* ptr, size_t count,
                  AllocationRef& allocation) const;

  /// The allocation whose base is exactly `ptr`, or null.
  AllocationRef findExact(const void* ptr) const;
  /// Removes `allocation` if it is still in the table; false otherwise (it
  /// was removed concurrently).
  bool erase(const Allocation& allocation);

 private:
  AllocationRef findLocked(const void* ptr, bool allow_end) const;
  /// Where the map holds the reference findLocked copies, or null.
  const AllocationRef* findRefLocked(const void* ptr, bool allow_end) const;

  mutable std::shared_mutex mutex_;
  std::map<uintptr_t, AllocationRef> by_base_;
  // by_base_'s references by exact base, with the allocation itself, so
  // that a launch that runs at once reads only the hash node (Note [Kernel
  // buffer lookup]): map nodes stay put until erased, and both are erased
  // together.
  struct Indexed {
    const AllocationRef* ref;
    Allocation* allocation;
  };
  // Open addressing (robin hood hashing): the slot holds the key and the
  // value, one cache line a lookup where a node-based map reads a bucket
  // and then a node. Its table size is a power of two and it takes the low
  // bits of the hash, while bases are page-aligned: the hash mixes first.
  struct BaseHash {
    size_t operator()(uintptr_t base) const noexcept {
      uint64_t h = base;
      h ^= h >> 33;
      h *= 0xff51afd7ed558ccdULL;
      h ^= h >> 33;
      return static_cast<size_t>(h);
    }
  };
  tsl::robin_map<uintptr_t, Indexed, BaseHash> by_exact_base_;
  /// The allocation holding kernel buffer `ptr` (Note [Kernel buffer
  /// lookup]), null fields when none does.
  Indexed findKernelBufferLocked(const void* ptr) const;
};

}  // namespace accgen::emulator
