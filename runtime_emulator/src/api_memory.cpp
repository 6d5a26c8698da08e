// Entry points for memory: device and pinned host allocation with capacity
// accounting, pointer attributes, memset and memcpy in every direction.
//
// Copies check each pointer's range against the allocation table: a range
// must lie wholly inside one allocation or wholly outside all of them, and
// the kind must match what the pointers really are. Asynchronous copies
// treat ordinary (unregistered) host memory like a CUDA driver treats
// pageable memory: the source is consumed before the call returns (copied
// at once when the stream is idle, else staged), and a pageable destination
// makes the call wait for its copy. Only pinned and device memory give truly
// asynchronous copies, so a caller may reuse a pageable buffer at once.
// Sources over kMaxStagingBytes are not staged (that would double their
// memory): the call then waits for the stream and copies in order.
//
// Note [Small work on an idle stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A memset or a copy between device or pinned memory of at most
// kInlineWorkBytes, queued on an idle stream, runs on the calling thread
// before the call returns; so does a kernel launched asynchronously that
// touches at most that much device memory (runsWhereLaunched in
// api_stream.cpp). Handing it to the stream's worker costs a wake-up there
// and another for whoever waits next (the next synchronous launch, Note
// [Synchronous launch]): microseconds each on a loaded machine, more than
// the copy itself. Larger work stays asynchronous. Asynchronous calls
// promise ordering, not concurrency.
#include <cstring>
#include <new>

#include "runtime.h"

using accgen::emulator::Allocation;
using accgen::emulator::AllocationRef;
using accgen::emulator::AllocationTable;
using accgen::emulator::Capture;
using accgen::emulator::guarded;
using accgen::emulator::kInlineWorkBytes;
using accgen::emulator::MemoryKind;
using accgen::emulator::Runtime;
using accgen::emulator::Stream;
using accgen::emulator::Work;
using accgen::emulator::WorkKind;

namespace {

constexpr size_t kMaxStagingBytes = size_t{16} << 20;

// What one side of a copy points at.
struct Side {
  AllocationRef allocation;  // null for unregistered host memory
  bool device() const {
    return allocation != nullptr && allocation->kind() == MemoryKind::kDevice;
  }
  bool pageable() const { return allocation == nullptr; }
};

accError_t resolveSide(Runtime& rt, const void* ptr, size_t count, Side& side) {
  const AllocationTable::Region region =
      rt.allocations().classify(ptr, count, side.allocation);
  if (region == AllocationTable::Region::kStraddling) {
    return accErrorInvalidValue;
  }
  if (region == AllocationTable::Region::kUnregistered) {
    side.allocation = nullptr;
  }
  return accSuccess;
}

bool validKind(accMemcpyKind kind) {
  return kind >= accMemcpyHostToHost && kind <= accMemcpyDefault;
}

bool kindMatches(accMemcpyKind kind, const Side& dst, const Side& src) {
  switch (kind) {
    case accMemcpyHostToHost:
      return !dst.device() && !src.device();
    case accMemcpyHostToDevice:
      return dst.device() && !src.device();
    case accMemcpyDeviceToHost:
      return !dst.device() && src.device();
    case accMemcpyDeviceToDevice:
      return dst.device() && src.device();
    case accMemcpyDefault:
      return true;
  }
  return false;
}

// Validates a copy and builds its work item.
accError_t prepareCopy(Runtime& rt, void* dst, const void* src, size_t count,
                       accMemcpyKind kind, Work& work, Side& dst_side,
                       Side& src_side) {
  if (accError_t e = resolveSide(rt, dst, count, dst_side); e != accSuccess) {
    return e;
  }
  if (accError_t e = resolveSide(rt, src, count, src_side); e != accSuccess) {
    return e;
  }
  if (!kindMatches(kind, dst_side, src_side)) {
    return accErrorInvalidValue;
  }
  work.kind = WorkKind::kCopy;
  work.dst = dst;
  work.src = src;
  work.count = count;
  if (dst_side.allocation != nullptr) {
    work.allocations.push_back(dst_side.allocation);
  }
  if (src_side.allocation != nullptr &&
      src_side.allocation != dst_side.allocation) {
    work.allocations.push_back(src_side.allocation);
  }
  return accSuccess;
}

accError_t prepareMemset(Runtime& rt, void* dev_ptr, int value, size_t count,
                         Work& work) {
  Side side;
  if (accError_t e = resolveSide(rt, dev_ptr, count, side); e != accSuccess) {
    return e;
  }
  if (!side.device()) {
    return accErrorInvalidValue;
  }
  work.kind = WorkKind::kMemset;
  work.dst = dev_ptr;
  work.value = value;
  work.count = count;
  work.allocations.push_back(std::move(side.allocation));
  return accSuccess;
}

// A synchronous operation: ordered after the work already queued on the
// current device's default stream (and on the default streams of the
// devices it touches), done before returning, and reporting the default
// stream's sticky error like a synchronization would.
accError_t runSynchronous(Runtime& rt, Work&& work) {
  if (accError_t e = rt.refuseWhileCapturing(Runtime::currentDevice());
      e != accSuccess) {
    return e;
  }
  Stream& stream = *rt.device(Runtime::currentDevice()).default_stream;
  for (const AllocationRef& allocation : work.allocations) {
    if (allocation->kind() == MemoryKind::kDevice) {
      Stream& other = *rt.device(allocation->device()).default_stream;
      if (&other != &stream) {
        other.drain();
      }
    }
  }
  const accError_t error = stream.runOrdered(std::move(work));
  if (error != accSuccess) {
    return error;
  }
  return stream.takeError();
}

}  // namespace

extern "C" {

accError_t accMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    *ptr = nullptr;
    if (size == 0) {
      return accSuccess;
    }
    auto& device = rt.device(Runtime::currentDevice());
    if (!device.reserve(size)) {
      return accErrorMemoryAllocation;
    }
    AllocationRef allocation =
        Allocation::mapDevice(device.index, size, rt.config().protect);
    if (allocation == nullptr) {
      device.unreserve(size);
      return accErrorMemoryAllocation;
    }
    try {
      rt.allocations().insert(allocation);
    } catch (...) {
      device.unreserve(size);
      throw;
    }
    *ptr = allocation->base();
    return accSuccess;
  });
}

accError_t accFree(void* ptr) {
  if (ptr == nullptr) {
    return accSuccess;
  }
  return guarded([&](Runtime& rt) {
    AllocationRef allocation = rt.allocations().findExact(ptr);
    if (allocation == nullptr || allocation->kind() != MemoryKind::kDevice) {
      return accErrorInvalidValue;
    }
    rt.drainDevice(allocation->device());
    if (!rt.allocations().erase(*allocation)) {
      return accErrorInvalidValue;  // freed concurrently by another thread
    }
    rt.device(allocation->device()).unreserve(allocation->size());
    return accSuccess;
  });
}

accError_t accMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    *ptr = nullptr;
    if (size == 0) {
      return accSuccess;
    }
    AllocationRef allocation = Allocation::allocateHost(size);
    if (allocation == nullptr) {
      return accErrorMemoryAllocation;
    }
    rt.allocations().insert(allocation);
    *ptr = allocation->base();
    return accSuccess;
  });
}

accError_t accFreeHost(void* ptr) {
  if (ptr == nullptr) {
    return accSuccess;
  }
  return guarded([&](Runtime& rt) {
    AllocationRef allocation = rt.allocations().findExact(ptr);
    if (allocation == nullptr || allocation->kind() != MemoryKind::kHost) {
      return accErrorInvalidValue;
    }
    // No wait: queued copies hold the allocation, which is freed after them.
    if (!rt.allocations().erase(*allocation)) {
      return accErrorInvalidValue;
    }
    return accSuccess;
  });
}

accError_t accMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    const auto& device = rt.device(Runtime::currentDevice());
    const uint64_t used = device.used.load(std::memory_order_relaxed);
    *total_bytes = static_cast<size_t>(device.capacity);
    *free_bytes = static_cast<size_t>(device.capacity - used);
    return accSuccess;
  });
}

accError_t accPointerGetAttributes(accPointerAttributes* attributes,
                                   const void* ptr) {
  if (attributes == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    AllocationRef allocation =
        ptr == nullptr ? nullptr : rt.allocations().find(ptr);
    if (allocation == nullptr) {
      attributes->type = accMemoryTypeUnregistered;
      attributes->device = -1;
      attributes->basePointer = nullptr;
      attributes->allocationSize = 0;
      return accSuccess;
    }
    const bool device = allocation->kind() == MemoryKind::kDevice;
    attributes->type = device ? accMemoryTypeDevice : accMemoryTypeHost;
    attributes->device = device ? allocation->device() : -1;
    attributes->basePointer = allocation->base();
    attributes->allocationSize = allocation->size();
    return accSuccess;
  });
}

accError_t accMemset(void* dev_ptr, int value, size_t count) {
  if (count == 0) {
    return accSuccess;
  }
  if (dev_ptr == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    Work work;
    if (accError_t e = prepareMemset(rt, dev_ptr, value, count, work);
        e != accSuccess) {
      return e;
    }
    return runSynchronous(rt, std::move(work));
  });
}

accError_t accMemsetAsync(void* dev_ptr, int value, size_t count,
                          accStream_t stream) {
  if (count != 0 && dev_ptr == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (count == 0) {
      return accSuccess;
    }
    Work work;
    if (accError_t e = prepareMemset(rt, dev_ptr, value, count, work);
        e != accSuccess) {
      return e;
    }
    if (std::shared_ptr<Capture> capture = target->capture()) {
      return capture->record(*target, std::move(work));
    }
    if (count <= kInlineWorkBytes && target->idle()) {
      return target->runOrdered(std::move(work));
    }
    uint64_t seq = 0;
    return target->submit(std::move(work), seq);
  });
}

accError_t accMemcpy(void* dst, const void* src, size_t count,
                     accMemcpyKind kind) {
  if (!validKind(kind)) {
    return accErrorInvalidValue;
  }
  if (count == 0) {
    return accSuccess;
  }
  if (dst == nullptr || src == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    Work work;
    Side dst_side;
    Side src_side;
    if (accError_t e =
            prepareCopy(rt, dst, src, count, kind, work, dst_side, src_side);
        e != accSuccess) {
      return e;
    }
    return runSynchronous(rt, std::move(work));
  });
}

accError_t accMemcpyAsync(void* dst, const void* src, size_t count,
                          accMemcpyKind kind, accStream_t stream) {
  if (!validKind(kind)) {
    return accErrorInvalidValue;
  }
  if (count != 0 && (dst == nullptr || src == nullptr)) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (count == 0) {
      return accSuccess;
    }
    Work work;
    Side dst_side;
    Side src_side;
    if (accError_t e =
            prepareCopy(rt, dst, src, count, kind, work, dst_side, src_side);
        e != accSuccess) {
      return e;
    }
    if (std::shared_ptr<Capture> capture = target->capture()) {
      // A replay could not read or fill ordinary host memory the caller
      // has since reused: only device and pinned memory are captured.
      if (dst_side.pageable() || src_side.pageable()) {
        return capture->invalidate(accErrorStreamCaptureUnsupported);
      }
      return capture->record(*target, std::move(work));
    }
    if (dst_side.pageable() ||
        (src_side.pageable() && (target->idle() || count > kMaxStagingBytes)) ||
        (count <= kInlineWorkBytes && target->idle())) {
      return target->runOrdered(std::move(work));
    }
    if (src_side.pageable()) {
      work.staging.reset(new (std::nothrow) std::byte[count]);
      if (work.staging == nullptr) {
        return accErrorMemoryAllocation;
      }
      std::memcpy(work.staging.get(), src, count);
    }
    uint64_t seq = 0;
    return target->submit(std::move(work), seq);
  });
}

}  // extern "C"
