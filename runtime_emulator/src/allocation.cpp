// Mapping, protection and lookup of allocations. The protection change and
// the access count move together under one mutex per allocation, so a
// release that protects the mapping can never land after a concurrent
// acquire that unprotected it.
//
// --8<-- [start:device-memory-access]
// Note [Device memory access]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// In the emulator, device memory is host memory kept behind a guard, so
// that a backend bug that dereferences a device pointer on the host
// crashes at once (SIGSEGV at the faulting instruction) instead of silently
// working, as it would not on real hardware.
//  - Every device allocation lives in a mapping of its own, PROT_NONE while
//    no work uses it.
//  - A kernel gets read/write access to exactly the allocations that hold
//    the pointers passed in `buffers` to accLaunchKernel, for the kernel's
//    duration, and to no other: touching another allocation faults. Any
//    pointer into an allocation (a tensor's data pointer at an offset in
//    its storage) grants the whole allocation.
//  - Access is reference-counted per allocation: the first holder makes the
//    mapping readable and writable, the last one to finish makes it
//    PROT_NONE again. Two kernels on different streams using the same
//    buffer at once both keep access until each ends.
//  - The driver grants itself access the same way for its own copies and
//    memsets.
//  - The guard is a checking mode: ACCGEN_EMU_PROTECT=1 turns it on, and
//    every test suite accgen ships or generates sets it. Off, the default,
//    device memory stays readable and writable and no mprotect is made: the
//    release mode for running workloads fast. With the guard on, every
//    kernel pays two mprotect calls per buffer (docs/emulator.md: about
//    2 us per buffer for a kernel run on the calling thread, up to 30 us
//    for one run by a stream's worker, on the 2-core development VM),
//    several times a small operator's whole cost, and buys a crash at the
//    first wrong host access. Generated code must therefore pass every
//    allocation a kernel touches in `buffers`; the guard finds the ones it
//    forgot.
// A vendor's driver has no such rule to implement: real device memory is
// not host-addressable in the first place.
// --8<-- [end:device-memory-access]
#include "allocation.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>

namespace accgen::emulator {
namespace {

size_t pageSize() {
  static const size_t page = [] {
    const long value = sysconf(_SC_PAGESIZE);
    return value > 0 ? static_cast<size_t>(value) : size_t{4096};
  }();
  return page;
}

// Pinned host memory is cache-line aligned, like the buffers torch allocates.
constexpr size_t kHostAlignment = 64;

// Note [Huge pages for device memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// mprotect costs time per populated page-table entry, and the access guard
// changes the protection of a whole allocation twice per kernel or copy.
// With 4 KiB pages a 64 MiB buffer takes about 22 ms per pair of changes on
// the development VM, as long as the copy itself; with 2 MiB transparent
// huge pages it takes 10 us. So allocations of at least kHugeThreshold get
// a mapping aligned to and rounded up to 2 MiB, advised MADV_HUGEPAGE (a
// no-op where THP is off). The rounding costs at most one partly used huge
// page of host memory per allocation; capacity accounting still counts the
// requested bytes.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeThreshold = size_t{1} << 20;

// Maps `mapped` bytes aligned to kHugePage; MAP_FAILED on failure.
void* mapAligned(size_t mapped, int prot, int flags) {
  if (mapped > std::numeric_limits<size_t>::max() - kHugePage) {
    return MAP_FAILED;
  }
  void* raw = mmap(nullptr, mapped + kHugePage, prot, flags, -1, 0);
  if (raw == MAP_FAILED) {
    return MAP_FAILED;
  }
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) {
    munmap(raw, aligned - start);
  }
  const uintptr_t tail = start + mapped + kHugePage - (aligned + mapped);
  if (tail > 0) {
    munmap(reinterpret_cast<void*>(aligned + mapped), tail);
  }
  void* base = reinterpret_cast<void*>(aligned);
  madvise(base, mapped, MADV_HUGEPAGE);
  return base;
}

}  // namespace

Allocation::Allocation(MemoryKind kind, int device, std::byte* base,
                       size_t size, size_t mapped_size, bool guarded)
    : kind_(kind),
      device_(device),
      base_(base),
      size_(size),
      mapped_size_(mapped_size),
      guarded_(guarded) {}

std::shared_ptr<Allocation> Allocation::mapDevice(int device, size_t size,
                                                  bool guarded) {
  const size_t page = size >= kHugeThreshold ? kHugePage : pageSize();
  if (size == 0 || size > std::numeric_limits<size_t>::max() - page) {
    return nullptr;
  }
  const size_t mapped = (size + page - 1) / page * page;
  const int prot = guarded ? PROT_NONE : PROT_READ | PROT_WRITE;
  // MAP_NORESERVE: capacity is enforced by accounting, so a large emulated
  // device does not need the host to commit swap for untouched pages.
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void* base = page == kHugePage ? mapAligned(mapped, prot, flags)
                                 : mmap(nullptr, mapped, prot, flags, -1, 0);
  if (base == MAP_FAILED) {
    return nullptr;
  }
  auto* allocation = new (std::nothrow)
      Allocation(MemoryKind::kDevice, device, static_cast<std::byte*>(base),
                 size, mapped, guarded);
  if (allocation == nullptr) {
    munmap(base, mapped);
    return nullptr;
  }
  return std::shared_ptr<Allocation>(allocation);
}

std::shared_ptr<Allocation> Allocation::allocateHost(size_t size) {
  if (size == 0 || size > std::numeric_limits<size_t>::max() - kHostAlignment) {
    return nullptr;
  }
  const size_t rounded =
      (size + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* base = std::aligned_alloc(kHostAlignment, rounded);
  if (base == nullptr) {
    return nullptr;
  }
  auto* allocation = new (std::nothrow)
      Allocation(MemoryKind::kHost, -1, static_cast<std::byte*>(base), size,
                 rounded, false);
  if (allocation == nullptr) {
    std::free(base);
    return nullptr;
  }
  return std::shared_ptr<Allocation>(allocation);
}

Allocation::~Allocation() {
  if (kind_ == MemoryKind::kDevice) {
    munmap(base_, mapped_size_);
  } else {
    std::free(base_);
  }
}

bool Allocation::acquire() {
  if (!guarded_) {
    return true;
  }
  std::lock_guard<std::mutex> lock(access_mutex_);
  if (access_count_ == 0 &&
      mprotect(base_, mapped_size_, PROT_READ | PROT_WRITE) != 0) {
    return false;
  }
  ++access_count_;
  return true;
}

void Allocation::release() {
  if (!guarded_) {
    return;
  }
  std::lock_guard<std::mutex> lock(access_mutex_);
  if (--access_count_ == 0) {
    // A failure leaves the memory accessible, which only weakens the guard.
    mprotect(base_, mapped_size_, PROT_NONE);
  }
}

AccessScope::~AccessScope() {
  for (size_t i = 0; i < count_ && i < kInline; ++i) {
    inline_[i]->release();
  }
  for (Allocation* allocation : overflow_) {
    allocation->release();
  }
}

bool AccessScope::add(Allocation* allocation) {
  if (allocation == nullptr) {
    return true;
  }
  if (!allocation->acquire()) {
    return false;
  }
  if (count_ < kInline) {
    inline_[count_] = allocation;
  } else {
    overflow_.push_back(allocation);
  }
  ++count_;
  return true;
}

void AllocationTable::insert(AllocationRef allocation) {
  const auto key = reinterpret_cast<uintptr_t>(allocation->base());
  std::unique_lock<std::shared_mutex> lock(mutex_);
  const auto [it, inserted] = by_base_.emplace(key, std::move(allocation));
  if (inserted) {
    by_exact_base_.emplace(key, Indexed{&it->second, it->second.get()});
  }
}

const AllocationRef* AllocationTable::findRefLocked(const void* ptr,
                                                    bool allow_end) const {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  auto it = by_base_.upper_bound(address);
  if (it == by_base_.begin()) {
    return nullptr;
  }
  --it;
  const uintptr_t offset = address - it->first;
  const size_t size = it->second->size();
  if (offset < size || (allow_end && offset == size)) {
    return &it->second;
  }
  return nullptr;
}

AllocationRef AllocationTable::findLocked(const void* ptr,
                                          bool allow_end) const {
  const AllocationRef* ref = findRefLocked(ptr, allow_end);
  return ref == nullptr ? nullptr : *ref;
}

AllocationRef AllocationTable::find(const void* ptr) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return findLocked(ptr, false);
}

AllocationRef AllocationTable::findForKernel(const void* ptr) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const Indexed found = findKernelBufferLocked(ptr);
  return found.ref != nullptr ? *found.ref : nullptr;
}

void AllocationRefs::push_back(AllocationRef allocation) {
  if (overflow_.empty() && size_ < kInline) {
    inline_[size_++] = std::move(allocation);
    return;
  }
  if (overflow_.empty()) {
    overflow_.reserve(2 * kInline);
    for (AllocationRef& held : inline_) {
      overflow_.push_back(std::move(held));
    }
  }
  overflow_.push_back(std::move(allocation));
  ++size_;
}

// Note [Kernel buffer lookup]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every launch resolves its buffers to allocations. Walking the ordered map
// (a hundred and more entries in a training step, a cache miss a level) for
// each buffer of each launch cost more than the rest of the launch, while
// nearly every buffer a backend passes is the base of its allocation (a
// storage's data pointer, and the caching allocator hands out whole
// allocations). So the table also indexes allocations by exact base in a
// hash map; other pointers take the ordered map. A kernel that runs before
// its launch returns (accLaunchIfIdle) takes no references: its caller
// holds the buffers for the call, and the hash node alone gives the
// allocation, where each reference cost two more cache misses (the map's
// node and the reference count) and two atomic operations.
AllocationTable::Indexed AllocationTable::findKernelBufferLocked(
    const void* ptr) const {
  const auto exact = by_exact_base_.find(reinterpret_cast<uintptr_t>(ptr));
  if (exact != by_exact_base_.end()) {
    return exact->second;
  }
  const AllocationRef* ref = findRefLocked(ptr, true);
  return {ref, ref != nullptr ? ref->get() : nullptr};
}

bool AllocationTable::findForKernel(const void* const* ptrs, size_t count,
                                    AllocationRefs& out) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (size_t i = 0; i < count; ++i) {
    if (ptrs[i] == nullptr) {
      continue;
    }
    const Indexed found = findKernelBufferLocked(ptrs[i]);
    if (found.ref == nullptr) {
      return false;
    }
    out.push_back(*found.ref);
  }
  return true;
}

bool AllocationTable::holdsKernelBuffer(const void* ptr) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return findKernelBufferLocked(ptr).allocation != nullptr;
}

bool AllocationTable::resolveForKernel(const void* const* ptrs, size_t count,
                                       Allocation** out, size_t& found) const {
  found = 0;
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (size_t i = 0; i < count; ++i) {
    if (ptrs[i] == nullptr) {
      continue;
    }
    Allocation* allocation = findKernelBufferLocked(ptrs[i]).allocation;
    if (allocation == nullptr) {
      return false;
    }
    out[found++] = allocation;
  }
  return true;
}

AllocationTable::Region AllocationTable::classify(
    const void* ptr, size_t count, AllocationRef& allocation) const {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::shared_lock<std::shared_mutex> lock(mutex_);
  allocation = findLocked(ptr, false);
  if (allocation != nullptr) {
    const uintptr_t offset =
        address - reinterpret_cast<uintptr_t>(allocation->base());
    return count <= allocation->size() - offset ? Region::kInside
                                                : Region::kStraddling;
  }
  // Host memory must not run into the next allocation either.
  auto next = by_base_.upper_bound(address);
  if (next != by_base_.end() && next->first - address < count) {
    allocation = next->second;
    return Region::kStraddling;
  }
  return Region::kUnregistered;
}

AllocationRef AllocationTable::findExact(const void* ptr) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  auto it = by_base_.find(reinterpret_cast<uintptr_t>(ptr));
  return it == by_base_.end() ? nullptr : it->second;
}

bool AllocationTable::erase(const Allocation& allocation) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  auto it = by_base_.find(reinterpret_cast<uintptr_t>(allocation.base()));
  if (it == by_base_.end() || it->second.get() != &allocation) {
    return false;
  }
  by_base_.erase(it);
  by_exact_base_.erase(reinterpret_cast<uintptr_t>(allocation.base()));
  return true;
}

}  // namespace accgen::emulator
