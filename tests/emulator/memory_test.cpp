// Device and pinned memory: allocation, exact capacity accounting, out of
// memory, pointer attributes (interior pointers included), memset and memcpy
// in every direction with the kind checked against the real pointers, and
// the pageable-memory rules of asynchronous copies.
#include <cstring>
#include <numeric>
#include <vector>

#include "test_util.h"

namespace accgen::emulator::test {
namespace {

struct MemInfo {
  size_t free_bytes = 0;
  size_t total = 0;
};

MemInfo memInfo() {
  MemInfo info;
  EXPECT_EQ(accMemGetInfo(&info.free_bytes, &info.total), accSuccess);
  return info;
}

std::vector<unsigned char> pattern(size_t count, unsigned seed) {
  std::vector<unsigned char> bytes(count);
  for (size_t i = 0; i < count; ++i) {
    bytes[i] = static_cast<unsigned char>((i * 131 + seed) & 0xff);
  }
  return bytes;
}

std::vector<unsigned char> readBack(const void* dev, size_t count) {
  std::vector<unsigned char> bytes(count);
  EXPECT_EQ(accMemcpy(bytes.data(), dev, count, accMemcpyDeviceToHost),
            accSuccess);
  return bytes;
}

TEST(Memory, MallocAndFree) {
  void* ptr = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(accMalloc(&ptr, 0), accSuccess);
  EXPECT_EQ(ptr, nullptr) << "zero bytes yield NULL";
  ASSERT_EQ(accMalloc(&ptr, 100), accSuccess);
  ASSERT_NE(ptr, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 4096, 0u) << "page aligned";
  EXPECT_EQ(accFree(ptr), accSuccess);
  EXPECT_EQ(accFree(nullptr), accSuccess);
  EXPECT_EQ(accMalloc(nullptr, 16), accErrorInvalidValue);
}

TEST(Memory, FreeErrors) {
  void* ptr = nullptr;
  ASSERT_EQ(accMalloc(&ptr, 256), accSuccess);
  EXPECT_EQ(accFree(static_cast<char*>(ptr) + 8), accErrorInvalidValue)
      << "an interior pointer is not an allocation";
  EXPECT_EQ(accFreeHost(ptr), accErrorInvalidValue) << "device memory";
  ASSERT_EQ(accFree(ptr), accSuccess);
  EXPECT_EQ(accFree(ptr), accErrorInvalidValue) << "double free";
  int local = 0;
  EXPECT_EQ(accFree(&local), accErrorInvalidValue) << "unknown pointer";

  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, 64), accSuccess);
  EXPECT_EQ(accFree(pinned), accErrorInvalidValue) << "pinned host memory";
  ASSERT_EQ(accFreeHost(pinned), accSuccess);
  EXPECT_EQ(accFreeHost(pinned), accErrorInvalidValue) << "double free";
  EXPECT_EQ(accFreeHost(nullptr), accSuccess);
  EXPECT_EQ(accMallocHost(nullptr, 8), accErrorInvalidValue);
}

TEST(Memory, AccountingIsExact) {
  const MemInfo before = memInfo();
  ASSERT_LE(before.free_bytes, before.total);
  const size_t sizes[] = {1, 4095, 4096, 4097, 1 << 20, 12345};
  std::vector<void*> ptrs;
  size_t used = 0;
  for (size_t size : sizes) {
    void* ptr = nullptr;
    ASSERT_EQ(accMalloc(&ptr, size), accSuccess);
    ptrs.push_back(ptr);
    used += size;
    const MemInfo now = memInfo();
    EXPECT_EQ(now.total, before.total);
    EXPECT_EQ(now.free_bytes, before.free_bytes - used)
        << "after allocating " << size << " bytes";
  }
  // Free out of order.
  for (size_t i : {3u, 0u, 5u, 1u, 4u, 2u}) {
    ASSERT_EQ(accFree(ptrs[i]), accSuccess);
    used -= sizes[i];
    EXPECT_EQ(memInfo().free_bytes, before.free_bytes - used);
  }
  EXPECT_EQ(memInfo().free_bytes, before.free_bytes);
  size_t free_bytes = 0;
  EXPECT_EQ(accMemGetInfo(&free_bytes, nullptr), accErrorInvalidValue);
  EXPECT_EQ(accMemGetInfo(nullptr, &free_bytes), accErrorInvalidValue);
}

TEST(Memory, AllocationOverCapacityFailsAndLeavesTheDeviceUsable) {
  const MemInfo before = memInfo();
  void* ptr = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(accMalloc(&ptr, before.total + 1), accErrorMemoryAllocation);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(accMalloc(&ptr, SIZE_MAX), accErrorMemoryAllocation);
  EXPECT_EQ(memInfo().free_bytes, before.free_bytes);

  // Exactly the remaining capacity fits; then one more byte does not.
  void* all = nullptr;
  ASSERT_EQ(accMalloc(&all, before.free_bytes), accSuccess);
  EXPECT_EQ(memInfo().free_bytes, 0u);
  void* one = nullptr;
  EXPECT_EQ(accMalloc(&one, 1), accErrorMemoryAllocation);
  ASSERT_EQ(accFree(all), accSuccess);
  EXPECT_EQ(memInfo().free_bytes, before.free_bytes);
  ASSERT_EQ(accMalloc(&one, 1), accSuccess);
  ASSERT_EQ(accFree(one), accSuccess);
}

TEST(Memory, CapacityIsPerDevice) {
  if (deviceCount() < 2) {
    GTEST_SKIP() << "needs two devices";
  }
  const MemInfo device0 = memInfo();
  ASSERT_EQ(accSetDevice(1), accSuccess);
  const MemInfo device1 = memInfo();
  void* ptr = nullptr;
  ASSERT_EQ(accMalloc(&ptr, 1 << 20), accSuccess);
  EXPECT_EQ(memInfo().free_bytes, device1.free_bytes - (1 << 20));
  ASSERT_EQ(accSetDevice(0), accSuccess);
  EXPECT_EQ(memInfo().free_bytes, device0.free_bytes);
  accPointerAttributes attributes{};
  ASSERT_EQ(accPointerGetAttributes(&attributes, ptr), accSuccess);
  EXPECT_EQ(attributes.device, 1);
  ASSERT_EQ(accFree(ptr), accSuccess) << "freed from another current device";
  ASSERT_EQ(accSetDevice(1), accSuccess);
  EXPECT_EQ(memInfo().free_bytes, device1.free_bytes);
  ASSERT_EQ(accSetDevice(0), accSuccess);
}

TEST(Memory, PointerAttributes) {
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, 1000), accSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, 300), accSuccess);

  accPointerAttributes attributes{};
  ASSERT_EQ(accPointerGetAttributes(&attributes, dev), accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
  EXPECT_EQ(attributes.basePointer, dev);
  EXPECT_EQ(attributes.allocationSize, 1000u);

  ASSERT_EQ(accPointerGetAttributes(&attributes, static_cast<char*>(dev) + 999),
            accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeDevice) << "interior pointer";
  EXPECT_EQ(attributes.basePointer, dev);
  EXPECT_EQ(attributes.allocationSize, 1000u);

  ASSERT_EQ(
      accPointerGetAttributes(&attributes, static_cast<char*>(dev) + 1000),
      accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeUnregistered) << "one past the end";

  ASSERT_EQ(
      accPointerGetAttributes(&attributes, static_cast<char*>(pinned) + 17),
      accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeHost);
  EXPECT_EQ(attributes.device, -1);
  EXPECT_EQ(attributes.basePointer, pinned);
  EXPECT_EQ(attributes.allocationSize, 300u);

  int local = 0;
  ASSERT_EQ(accPointerGetAttributes(&attributes, &local), accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeUnregistered);
  EXPECT_EQ(attributes.device, -1);
  EXPECT_EQ(attributes.basePointer, nullptr);
  ASSERT_EQ(accPointerGetAttributes(&attributes, nullptr), accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeUnregistered);
  EXPECT_EQ(accPointerGetAttributes(nullptr, dev), accErrorInvalidValue);

  ASSERT_EQ(accFree(dev), accSuccess);
  ASSERT_EQ(accPointerGetAttributes(&attributes, dev), accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeUnregistered) << "freed";
  ASSERT_EQ(accFreeHost(pinned), accSuccess);
}

TEST(Memory, PinnedHostMemoryIsReadableFromTheHost) {
  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, 4096), accSuccess);
  std::memset(pinned, 7, 4096);
  EXPECT_EQ(static_cast<unsigned char*>(pinned)[4095], 7);
  ASSERT_EQ(accFreeHost(pinned), accSuccess);
  void* none = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(accMallocHost(&none, 0), accSuccess);
  EXPECT_EQ(none, nullptr);
}

TEST(Memory, CopiesInEveryDirection) {
  const size_t n = 3 * 4096 + 77;
  const auto source = pattern(n, 3);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(accMalloc(&a, n), accSuccess);
  ASSERT_EQ(accMalloc(&b, n), accSuccess);

  ASSERT_EQ(accMemcpy(a, source.data(), n, accMemcpyHostToDevice), accSuccess);
  EXPECT_EQ(readBack(a, n), source) << "H2D then D2H";
  ASSERT_EQ(accMemcpy(b, a, n, accMemcpyDeviceToDevice), accSuccess);
  EXPECT_EQ(readBack(b, n), source) << "D2D";

  std::vector<unsigned char> host(n);
  ASSERT_EQ(accMemcpy(host.data(), source.data(), n, accMemcpyHostToHost),
            accSuccess);
  EXPECT_EQ(host, source) << "H2H";

  // Default infers every direction.
  const auto other = pattern(n, 9);
  ASSERT_EQ(accMemcpy(a, other.data(), n, accMemcpyDefault), accSuccess);
  ASSERT_EQ(accMemcpy(b, a, n, accMemcpyDefault), accSuccess);
  ASSERT_EQ(accMemcpy(host.data(), b, n, accMemcpyDefault), accSuccess);
  EXPECT_EQ(host, other);

  // Offsets inside allocations.
  ASSERT_EQ(accMemcpy(static_cast<char*>(a) + 100, source.data(), 50,
                      accMemcpyHostToDevice),
            accSuccess);
  const auto back = readBack(a, n);
  EXPECT_TRUE(
      std::equal(back.begin() + 100, back.begin() + 150, source.begin()));
  EXPECT_EQ(back[99], other[99]);
  EXPECT_EQ(back[150], other[150]);

  EXPECT_EQ(accMemcpy(a, source.data(), 0, accMemcpyHostToDevice), accSuccess);
  ASSERT_EQ(accFree(a), accSuccess);
  ASSERT_EQ(accFree(b), accSuccess);
}

TEST(Memory, CopyAcrossDevices) {
  if (deviceCount() < 2) {
    GTEST_SKIP() << "needs two devices";
  }
  const size_t n = 10000;
  const auto source = pattern(n, 5);
  void* on0 = nullptr;
  ASSERT_EQ(accMalloc(&on0, n), accSuccess);
  ASSERT_EQ(accSetDevice(1), accSuccess);
  void* on1 = nullptr;
  ASSERT_EQ(accMalloc(&on1, n), accSuccess);
  ASSERT_EQ(accMemcpy(on1, source.data(), n, accMemcpyHostToDevice),
            accSuccess);
  ASSERT_EQ(accSetDevice(0), accSuccess);
  ASSERT_EQ(accMemcpy(on0, on1, n, accMemcpyDeviceToDevice), accSuccess);
  EXPECT_EQ(readBack(on0, n), source);

  // Asynchronously on a stream of device 1, back the other way.
  const auto second = pattern(n, 6);
  ASSERT_EQ(accMemcpy(on0, second.data(), n, accMemcpyHostToDevice),
            accSuccess);
  accStream_t stream1 = nullptr;
  ASSERT_EQ(accGetDefaultStream(1, &stream1), accSuccess);
  ASSERT_EQ(accMemcpyAsync(on1, on0, n, accMemcpyDeviceToDevice, stream1),
            accSuccess);
  ASSERT_EQ(accStreamSynchronize(stream1), accSuccess);
  EXPECT_EQ(readBack(on1, n), second);
  ASSERT_EQ(accFree(on0), accSuccess);
  ASSERT_EQ(accFree(on1), accSuccess);
}

TEST(Memory, CopyKindMustMatchThePointers) {
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, 64), accSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, 64), accSuccess);
  char host[64] = {};

  EXPECT_EQ(accMemcpy(host, pinned, 64, accMemcpyHostToDevice),
            accErrorInvalidValue)
      << "H2D to host memory";
  EXPECT_EQ(accMemcpy(dev, dev, 64, accMemcpyHostToDevice),
            accErrorInvalidValue)
      << "H2D from device memory";
  EXPECT_EQ(accMemcpy(host, host, 64, accMemcpyDeviceToHost),
            accErrorInvalidValue)
      << "D2H from host memory";
  EXPECT_EQ(accMemcpy(dev, dev, 64, accMemcpyDeviceToHost),
            accErrorInvalidValue)
      << "D2H to device memory";
  EXPECT_EQ(accMemcpy(dev, host, 64, accMemcpyDeviceToDevice),
            accErrorInvalidValue)
      << "D2D from host memory";
  EXPECT_EQ(accMemcpy(pinned, dev, 64, accMemcpyDeviceToDevice),
            accErrorInvalidValue)
      << "D2D to pinned memory";
  EXPECT_EQ(accMemcpy(host, dev, 64, accMemcpyHostToHost), accErrorInvalidValue)
      << "H2H from device memory";
  EXPECT_EQ(accMemcpy(dev, host, 64, static_cast<accMemcpyKind>(7)),
            accErrorInvalidValue)
      << "no such kind";
  EXPECT_EQ(accMemcpy(nullptr, host, 64, accMemcpyDefault),
            accErrorInvalidValue);
  EXPECT_EQ(accMemcpy(dev, nullptr, 64, accMemcpyDefault),
            accErrorInvalidValue);

  // Pinned memory is host memory.
  EXPECT_EQ(accMemcpy(dev, pinned, 64, accMemcpyHostToDevice), accSuccess);
  EXPECT_EQ(accMemcpy(pinned, dev, 64, accMemcpyDeviceToHost), accSuccess);
  EXPECT_EQ(accMemcpy(host, pinned, 64, accMemcpyHostToHost), accSuccess);

  // The same checks hold asynchronously.
  EXPECT_EQ(accMemcpyAsync(host, host, 64, accMemcpyDeviceToHost, nullptr),
            accErrorInvalidValue);
  EXPECT_EQ(accMemcpyAsync(dev, dev, 64, accMemcpyHostToDevice, nullptr),
            accErrorInvalidValue);
  ASSERT_EQ(accFree(dev), accSuccess);
  ASSERT_EQ(accFreeHost(pinned), accSuccess);
}

TEST(Memory, RangesMustStayInsideTheirAllocation) {
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, 100), accSuccess);
  std::vector<char> host(200);
  EXPECT_EQ(accMemcpy(dev, host.data(), 101, accMemcpyHostToDevice),
            accErrorInvalidValue)
      << "larger than the allocation";
  EXPECT_EQ(accMemcpy(static_cast<char*>(dev) + 50, host.data(), 51,
                      accMemcpyHostToDevice),
            accErrorInvalidValue)
      << "runs past the end from an offset";
  EXPECT_EQ(accMemcpy(host.data(), dev, 101, accMemcpyDeviceToHost),
            accErrorInvalidValue);
  EXPECT_EQ(accMemset(dev, 0, 101), accErrorInvalidValue);
  EXPECT_EQ(accMemcpy(static_cast<char*>(dev) + 50, host.data(), 50,
                      accMemcpyHostToDevice),
            accSuccess)
      << "exactly to the end";
  ASSERT_EQ(accFree(dev), accSuccess);
  EXPECT_EQ(accMemcpy(host.data(), dev, 10, accMemcpyDeviceToHost),
            accErrorInvalidValue)
      << "freed memory is not device memory";
  EXPECT_EQ(accMemset(dev, 0, 10), accErrorInvalidValue);
}

TEST(Memory, Memset) {
  const size_t n = 5000;
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, n), accSuccess);
  ASSERT_EQ(accMemset(dev, 0xab, n), accSuccess);
  ASSERT_EQ(accMemset(static_cast<char*>(dev) + 10, 0x1cd, 20), accSuccess)
      << "the value is taken as an unsigned char";
  auto bytes = readBack(dev, n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(bytes[i], (i >= 10 && i < 30) ? 0xcd : 0xab) << "byte " << i;
  }
  ASSERT_EQ(accMemsetAsync(dev, 0x11, n, nullptr), accSuccess);
  ASSERT_EQ(accStreamSynchronize(nullptr), accSuccess);
  bytes = readBack(dev, n);
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0x11), static_cast<long>(n));

  char host[16];
  EXPECT_EQ(accMemset(host, 0, sizeof(host)), accErrorInvalidValue)
      << "host memory";
  EXPECT_EQ(accMemset(nullptr, 0, 4), accErrorInvalidValue);
  EXPECT_EQ(accMemset(dev, 0, 0), accSuccess);
  EXPECT_EQ(accMemsetAsync(dev, 0, 4, reinterpret_cast<accStream_t>(host)),
            accErrorInvalidHandle);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Memory, AsyncCopiesAreStreamOrdered) {
  const size_t n = 1 << 16;
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(accMalloc(&a, n), accSuccess);
  ASSERT_EQ(accMalloc(&b, n), accSuccess);
  void* pinned_in = nullptr;
  void* pinned_out = nullptr;
  ASSERT_EQ(accMallocHost(&pinned_in, n), accSuccess);
  ASSERT_EQ(accMallocHost(&pinned_out, n), accSuccess);
  const auto source = pattern(n, 11);
  std::memcpy(pinned_in, source.data(), n);

  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(holdStream(stream, gate), accSuccess);
  ASSERT_EQ(accMemcpyAsync(a, pinned_in, n, accMemcpyHostToDevice, stream),
            accSuccess);
  ASSERT_EQ(accMemsetAsync(b, 0, n, stream), accSuccess);
  ASSERT_EQ(accMemcpyAsync(b, a, n / 2, accMemcpyDeviceToDevice, stream),
            accSuccess);
  ASSERT_EQ(accMemcpyAsync(pinned_out, b, n, accMemcpyDeviceToHost, stream),
            accSuccess);
  // Pinned memory gives truly asynchronous copies: nothing ran yet.
  EXPECT_EQ(accStreamQuery(stream), accErrorNotReady);
  gate->open();
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  const auto* out = static_cast<const unsigned char*>(pinned_out);
  EXPECT_TRUE(std::equal(out, out + n / 2, source.begin()));
  EXPECT_TRUE(std::all_of(out + n / 2, out + n,
                          [](unsigned char c) { return c == 0; }));

  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  ASSERT_EQ(accFree(a), accSuccess);
  ASSERT_EQ(accFree(b), accSuccess);
  ASSERT_EQ(accFreeHost(pinned_in), accSuccess);
  ASSERT_EQ(accFreeHost(pinned_out), accSuccess);
}

TEST(Memory, AsyncCopyConsumesAPageableSourceBeforeReturning) {
  const size_t n = 4096;
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, n), accSuccess);
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(holdStream(stream, gate), accSuccess);
  auto host = pattern(n, 1);
  const auto expected = host;
  ASSERT_EQ(accMemcpyAsync(dev, host.data(), n, accMemcpyHostToDevice, stream),
            accSuccess);
  std::fill(host.begin(), host.end(), 0xee);  // the caller reuses its buffer
  host.clear();
  host.shrink_to_fit();
  gate->open();
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  EXPECT_EQ(readBack(dev, n), expected);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Memory, LargePageableSourceIsConsumedBeforeReturning) {
  // Over the staging limit the call waits for the stream instead of
  // staging; either way the caller may reuse its buffer at once.
  const size_t n = size_t{20} << 20;
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, n), accSuccess);
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  ASSERT_EQ(launch(stream,
                   [] {
                     std::this_thread::sleep_for(std::chrono::milliseconds(20));
                     return accSuccess;
                   }),
            accSuccess);
  auto host = pattern(n, 8);
  const auto expected = host;
  ASSERT_EQ(accMemcpyAsync(dev, host.data(), n, accMemcpyHostToDevice, stream),
            accSuccess);
  std::fill(host.begin(), host.end(), 0);
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  EXPECT_TRUE(readBack(dev, n) == expected);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Memory, AsyncCopyToPageableMemoryIsCompleteOnReturn) {
  const size_t n = 4096;
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, n), accSuccess);
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  // The stream is busy for a while, then writes the pattern.
  const auto expected = pattern(n, 4);
  ASSERT_EQ(launch(stream,
                   [dev, &expected] {
                     std::this_thread::sleep_for(std::chrono::milliseconds(30));
                     std::memcpy(dev, expected.data(), expected.size());
                     return accSuccess;
                   },
                   {dev}),
            accSuccess);
  std::vector<unsigned char> host(n, 0);
  ASSERT_EQ(accMemcpyAsync(host.data(), dev, n, accMemcpyDeviceToHost, stream),
            accSuccess);
  EXPECT_EQ(host, expected) << "no synchronize needed for pageable memory";
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Memory, PinnedMemoryFreedWhileACopyIsQueuedStaysValidForIt) {
  const size_t n = 8192;
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, n), accSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, n), accSuccess);
  const auto source = pattern(n, 2);
  std::memcpy(pinned, source.data(), n);
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(holdStream(stream, gate), accSuccess);
  ASSERT_EQ(accMemcpyAsync(dev, pinned, n, accMemcpyHostToDevice, stream),
            accSuccess);
  ASSERT_EQ(accFreeHost(pinned), accSuccess) << "returns without waiting";
  accPointerAttributes attributes{};
  ASSERT_EQ(accPointerGetAttributes(&attributes, pinned), accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeUnregistered);
  gate->open();
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  EXPECT_EQ(readBack(dev, n), source);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Memory, FreeWaitsForPendingWorkOnTheDevice) {
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, 64), accSuccess);
  std::atomic<bool> finished{false};
  ASSERT_EQ(launch(nullptr,
                   [dev, &finished] {
                     std::this_thread::sleep_for(std::chrono::milliseconds(30));
                     std::memset(dev, 1, 64);
                     finished.store(true);
                     return accSuccess;
                   },
                   {dev}),
            accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace accgen::emulator::test
