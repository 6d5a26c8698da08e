// Acceptance tests of a driver: what every implementation of
// accgen/driver.h must do, through device code launched by name, so that
// the same tests run against the emulator and the remote driver (and a
// vendor's). Nothing here touches device memory from the host.
#include <accgen/driver.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "driver_util.h"

namespace accgen::driver_test {
namespace {

int deviceCount() {
  int count = 0;
  EXPECT_EQ(accGetDeviceCount(&count), accSuccess);
  return count;
}

TEST(Driver, DevicesAndProperties) {
  const int count = deviceCount();
  ASSERT_GE(count, 2);
  accDeviceProp prop{};
  EXPECT_EQ(accGetDeviceProperties(&prop, 0), accSuccess);
  EXPECT_GT(prop.totalGlobalMem, 0u);
  EXPECT_GT(std::strlen(prop.name), 0u);
  EXPECT_EQ(accGetDeviceProperties(&prop, count), accErrorInvalidDevice);
  EXPECT_EQ(accSetDevice(count), accErrorInvalidDevice);
  EXPECT_EQ(accSetDevice(-1), accErrorInvalidDevice);
  int device = -1;
  EXPECT_EQ(accGetDevice(&device), accSuccess);
  EXPECT_EQ(device, 0);
}

TEST(Driver, HostAddressableAttribute) {
  int value = -1;
  EXPECT_EQ(accDeviceGetAttribute(&value, accDevAttrHostAddressable, 0),
            accSuccess);
  EXPECT_EQ(value, ACCGEN_TEST_HOST_ADDRESSABLE);
  EXPECT_EQ(
      accDeviceGetAttribute(&value, accDevAttrHostAddressable, deviceCount()),
      accErrorInvalidDevice);
  EXPECT_EQ(accDeviceGetAttribute(nullptr, accDevAttrHostAddressable, 0),
            accErrorInvalidValue);
}

TEST(Driver, CopiesRoundTrip) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(i) * 0.5f;
  }
  const size_t bytes = values.size() * sizeof(float);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(accMalloc(&a, bytes), accSuccess);
  ASSERT_EQ(accMalloc(&b, bytes), accSuccess);
  EXPECT_EQ(accMemcpy(a, values.data(), bytes, accMemcpyHostToDevice),
            accSuccess);
  EXPECT_EQ(accMemcpy(b, a, bytes, accMemcpyDeviceToDevice), accSuccess);
  std::vector<float> back(values.size());
  EXPECT_EQ(accMemcpy(back.data(), b, bytes, accMemcpyDefault), accSuccess);
  EXPECT_EQ(back, values);
  EXPECT_EQ(accFree(a), accSuccess);
  EXPECT_EQ(accFree(b), accSuccess);
}

TEST(Driver, MemoryErrors) {
  void* ptr = reinterpret_cast<void*>(1);
  EXPECT_EQ(accMalloc(&ptr, 0), accSuccess);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(accFree(nullptr), accSuccess);
  ASSERT_EQ(accMalloc(&ptr, 1024), accSuccess);
  char* middle = static_cast<char*>(ptr) + 16;
  EXPECT_EQ(accFree(middle), accErrorInvalidValue);
  char host[2048] = {};
  // Past the end of the allocation, and a kind that contradicts a pointer.
  EXPECT_EQ(accMemcpy(ptr, host, 2048, accMemcpyHostToDevice),
            accErrorInvalidValue);
  EXPECT_EQ(accMemcpy(ptr, host, 16, accMemcpyDeviceToHost),
            accErrorInvalidValue);
  EXPECT_EQ(accMemset(middle, 0, 2048), accErrorInvalidValue);
  EXPECT_EQ(accFree(ptr), accSuccess);
  EXPECT_EQ(accFree(ptr), accErrorInvalidValue);  // freed twice
}

TEST(Driver, OutOfMemoryIsRecoverable) {
  size_t free_bytes = 0;
  size_t total = 0;
  ASSERT_EQ(accMemGetInfo(&free_bytes, &total), accSuccess);
  ASSERT_GT(total, 0u);
  void* ptr = nullptr;
  EXPECT_EQ(accMalloc(&ptr, total + 1), accErrorMemoryAllocation);
  ASSERT_EQ(accMalloc(&ptr, 1 << 20), accSuccess);
  size_t after = 0;
  ASSERT_EQ(accMemGetInfo(&after, &total), accSuccess);
  EXPECT_LE(after + (1 << 20), free_bytes);
  EXPECT_EQ(accFree(ptr), accSuccess);
}

TEST(Driver, MemsetAndCopyAcrossDevices) {
  void* on0 = nullptr;
  void* on1 = nullptr;
  ASSERT_EQ(accMalloc(&on0, 64), accSuccess);
  ASSERT_EQ(accSetDevice(1), accSuccess);
  ASSERT_EQ(accMalloc(&on1, 64), accSuccess);
  accPointerAttributes attributes{};
  EXPECT_EQ(accPointerGetAttributes(&attributes, on1), accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 1);
  EXPECT_EQ(attributes.basePointer, on1);
  EXPECT_EQ(accSetDevice(0), accSuccess);
  EXPECT_EQ(accMemset(on0, 0x5a, 64), accSuccess);
  EXPECT_EQ(accMemcpy(on1, on0, 64, accMemcpyDeviceToDevice), accSuccess);
  unsigned char back[64] = {};
  EXPECT_EQ(accMemcpy(back, on1, 64, accMemcpyDeviceToHost), accSuccess);
  EXPECT_TRUE(std::all_of(std::begin(back), std::end(back),
                          [](unsigned char c) { return c == 0x5a; }));
  EXPECT_EQ(accFree(on0), accSuccess);
  EXPECT_EQ(accFree(on1), accSuccess);
}

TEST(Driver, PointerAttributes) {
  int local = 0;
  accPointerAttributes attributes{};
  EXPECT_EQ(accPointerGetAttributes(&attributes, &local), accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeUnregistered);
  EXPECT_EQ(attributes.device, -1);
  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, 4096), accSuccess);
  EXPECT_EQ(
      accPointerGetAttributes(&attributes, static_cast<char*>(pinned) + 100),
      accSuccess);
  EXPECT_EQ(attributes.type, accMemoryTypeHost);
  EXPECT_EQ(attributes.basePointer, pinned);
  EXPECT_EQ(attributes.allocationSize, 4096u);
  EXPECT_EQ(accFreeHost(pinned), accSuccess);
  EXPECT_EQ(accFreeHost(&local), accErrorInvalidValue);
}

TEST(Driver, ModulesAndFunctionsByName) {
  accModule_t module = nullptr;
  EXPECT_EQ(accModuleLoad(&module, "/nonexistent/module.so"),
            accErrorInvalidValue);
  accFunction_t fn = nullptr;
  EXPECT_EQ(accModuleGetFunction(&fn, testModule(), "no_such_function"),
            accErrorInvalidValue);
  EXPECT_EQ(accLaunchFunction(nullptr, nullptr, 0, nullptr),
            accErrorInvalidHandle);
  // A module of its own can be unloaded; its functions go with it.
  ASSERT_EQ(accModuleLoad(&module, ACCGEN_TEST_KERNELS), accSuccess);
  ASSERT_EQ(accModuleGetFunction(&fn, module, "fail"), accSuccess);
  EXPECT_EQ(accModuleUnload(module), accSuccess);
  EXPECT_EQ(accLaunchFunction(fn, nullptr, 0, nullptr), accErrorInvalidHandle);
  EXPECT_EQ(accModuleUnload(module), accErrorInvalidHandle);
}

TEST(Driver, DeviceFunctionComputes) {
  constexpr size_t kN = 4096;
  std::vector<float> x(kN);
  std::vector<float> y(kN);
  for (size_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f - static_cast<float>(i) * 0.25f;
  }
  float* dx = nullptr;
  float* dy = nullptr;
  float* out = nullptr;
  const size_t bytes = kN * sizeof(float);
  ASSERT_EQ(accMalloc(reinterpret_cast<void**>(&dx), bytes), accSuccess);
  ASSERT_EQ(accMalloc(reinterpret_cast<void**>(&dy), bytes), accSuccess);
  ASSERT_EQ(accMalloc(reinterpret_cast<void**>(&out), bytes), accSuccess);
  ASSERT_EQ(accMemcpy(dx, x.data(), bytes, accMemcpyHostToDevice), accSuccess);
  ASSERT_EQ(accMemcpy(dy, y.data(), bytes, accMemcpyHostToDevice), accSuccess);
  struct {
    float* out;
    const float* x;
    const float* y;
    uint64_t n;
  } args{out, dx, dy, kN};
  ASSERT_EQ(launch("add_f32", args), accSuccess);
  std::vector<float> back(kN);
  ASSERT_EQ(accMemcpy(back.data(), out, bytes, accMemcpyDeviceToHost),
            accSuccess);
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_EQ(back[i], x[i] + y[i]) << i;
  }
  for (float* ptr : {dx, dy, out}) {
    EXPECT_EQ(accFree(ptr), accSuccess);
  }
}

TEST(Driver, StreamsRunInOrderAndAsynchronously) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  uint32_t* word = nullptr;
  ASSERT_EQ(accMalloc(reinterpret_cast<void**>(&word), 4), accSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, 4), accSuccess);
  std::memset(pinned, 0, 4);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(sleepOn(stream, 100), accSuccess);
  ASSERT_EQ(fill(word, 1, 7, stream), accSuccess);
  ASSERT_EQ(accMemcpyAsync(pinned, word, 4, accMemcpyDeviceToHost, stream),
            accSuccess);
  // Nothing waited for the sleeping kernel.
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(80));
  EXPECT_EQ(accStreamQuery(stream), accErrorNotReady);
  EXPECT_EQ(accStreamSynchronize(stream), accSuccess);
  EXPECT_GE(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(100));
  EXPECT_EQ(*static_cast<uint32_t*>(pinned), 7u);
  EXPECT_EQ(accStreamQuery(stream), accSuccess);
  EXPECT_EQ(accFreeHost(pinned), accSuccess);
  EXPECT_EQ(accFree(word), accSuccess);
  EXPECT_EQ(accStreamDestroy(stream), accSuccess);
  EXPECT_EQ(accStreamDestroy(stream), accErrorInvalidHandle);
}

TEST(Driver, PinnedCopiesAreStreamOrdered) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  constexpr size_t kBytes = 1 << 20;
  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, kBytes), accSuccess);
  std::memset(pinned, 3, kBytes);
  void* device = nullptr;
  ASSERT_EQ(accMalloc(&device, kBytes), accSuccess);
  ASSERT_EQ(sleepOn(stream, 50), accSuccess);
  ASSERT_EQ(
      accMemcpyAsync(device, pinned, kBytes, accMemcpyHostToDevice, stream),
      accSuccess);
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  std::memset(pinned, 0, kBytes);
  ASSERT_EQ(
      accMemcpyAsync(pinned, device, kBytes, accMemcpyDeviceToHost, stream),
      accSuccess);
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  const auto* bytes = static_cast<const unsigned char*>(pinned);
  EXPECT_TRUE(std::all_of(bytes, bytes + kBytes,
                          [](unsigned char c) { return c == 3; }));
  EXPECT_EQ(accFree(device), accSuccess);
  EXPECT_EQ(accFreeHost(pinned), accSuccess);
  EXPECT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Driver, EventsTimeAndOrderStreams) {
  accStream_t first = nullptr;
  accStream_t second = nullptr;
  ASSERT_EQ(accStreamCreate(&first), accSuccess);
  ASSERT_EQ(accStreamCreate(&second), accSuccess);
  accEvent_t start = nullptr;
  accEvent_t end = nullptr;
  ASSERT_EQ(accEventCreate(&start), accSuccess);
  ASSERT_EQ(accEventCreate(&end), accSuccess);
  EXPECT_EQ(accEventQuery(end), accSuccess);  // never recorded
  uint32_t* words = nullptr;
  ASSERT_EQ(accMalloc(reinterpret_cast<void**>(&words), 8), accSuccess);
  ASSERT_EQ(fill(words, 2, 0), accSuccess);
  ASSERT_EQ(accDeviceSynchronize(), accSuccess);
  ASSERT_EQ(accEventRecord(start, first), accSuccess);
  ASSERT_EQ(sleepOn(first, 60), accSuccess);
  ASSERT_EQ(fill(words, 1, 5, first), accSuccess);
  ASSERT_EQ(accEventRecord(end, first), accSuccess);
  EXPECT_EQ(accEventQuery(end), accErrorNotReady);
  // `second` copies the word once `first` wrote it.
  ASSERT_EQ(accStreamWaitEvent(second, end, 0), accSuccess);
  ASSERT_EQ(
      accMemcpyAsync(words + 1, words, 4, accMemcpyDeviceToDevice, second),
      accSuccess);
  ASSERT_EQ(accStreamSynchronize(second), accSuccess);
  EXPECT_EQ(readWord(words + 1), 5u);
  ASSERT_EQ(accEventSynchronize(end), accSuccess);
  float ms = 0;
  ASSERT_EQ(accEventElapsedTime(&ms, start, end), accSuccess);
  EXPECT_GE(ms, 50.0f);
  EXPECT_LT(ms, 5000.0f);
  accEvent_t untimed = nullptr;
  ASSERT_EQ(accEventCreateWithFlags(&untimed, accEventDisableTiming),
            accSuccess);
  ASSERT_EQ(accEventRecord(untimed, first), accSuccess);
  ASSERT_EQ(accEventSynchronize(untimed), accSuccess);
  EXPECT_EQ(accEventElapsedTime(&ms, start, untimed), accErrorInvalidHandle);
  for (accEvent_t event : {start, end, untimed}) {
    EXPECT_EQ(accEventDestroy(event), accSuccess);
  }
  EXPECT_EQ(accEventQuery(start), accErrorInvalidHandle);
  EXPECT_EQ(accFree(words), accSuccess);
  EXPECT_EQ(accStreamDestroy(first), accSuccess);
  EXPECT_EQ(accStreamDestroy(second), accSuccess);
}

TEST(Driver, KernelErrorsAreStickyAndSpread) {
  accStream_t failing = nullptr;
  accStream_t waiting = nullptr;
  ASSERT_EQ(accStreamCreate(&failing), accSuccess);
  ASSERT_EQ(accStreamCreate(&waiting), accSuccess);
  accEvent_t after = nullptr;
  ASSERT_EQ(accEventCreate(&after), accSuccess);
  // The launch itself succeeds; the error comes with the synchronization.
  ASSERT_EQ(launch("fail", uint64_t{0}, failing), accSuccess);
  ASSERT_EQ(accEventRecord(after, failing), accSuccess);
  ASSERT_EQ(accStreamWaitEvent(waiting, after, 0), accSuccess);
  // A stream that waited for failed work fails too.
  EXPECT_EQ(accStreamSynchronize(waiting), accErrorLaunchFailure);
  EXPECT_EQ(accStreamQuery(waiting), accSuccess);  // taken
  EXPECT_EQ(accStreamSynchronize(failing), accErrorLaunchFailure);
  EXPECT_EQ(accStreamSynchronize(failing), accSuccess);
  EXPECT_EQ(accEventDestroy(after), accSuccess);
  EXPECT_EQ(accStreamDestroy(failing), accSuccess);
  EXPECT_EQ(accStreamDestroy(waiting), accSuccess);
}

TEST(Driver, StreamPrioritiesAndDevices) {
  int least = 0;
  int greatest = 0;
  ASSERT_EQ(accDeviceGetStreamPriorityRange(&least, &greatest), accSuccess);
  EXPECT_LE(greatest, least);
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreateWithPriority(&stream, 0, greatest - 10), accSuccess);
  int priority = 0;
  EXPECT_EQ(accStreamGetPriority(stream, &priority), accSuccess);
  EXPECT_EQ(priority, greatest);
  EXPECT_EQ(accStreamDestroy(stream), accSuccess);
  ASSERT_EQ(accSetDevice(1), accSuccess);
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  int device = -1;
  EXPECT_EQ(accStreamGetDevice(stream, &device), accSuccess);
  EXPECT_EQ(device, 1);
  accStream_t default1 = nullptr;
  EXPECT_EQ(accGetDefaultStream(1, &default1), accSuccess);
  EXPECT_NE(default1, nullptr);
  EXPECT_EQ(accStreamGetDevice(default1, &device), accSuccess);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(accStreamDestroy(stream), accSuccess);
  ASSERT_EQ(accSetDevice(0), accSuccess);
}

// A host function runs in stream order: after the device work before it.
TEST(Driver, HostFunctionsRunInStreamOrder) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(accMallocHost(&pinned, 4), accSuccess);
  uint32_t* word = nullptr;
  ASSERT_EQ(accMalloc(reinterpret_cast<void**>(&word), 4), accSuccess);
  ASSERT_EQ(sleepOn(stream, 30), accSuccess);
  ASSERT_EQ(fill(word, 1, 11, stream), accSuccess);
  ASSERT_EQ(accMemcpyAsync(pinned, word, 4, accMemcpyDeviceToHost, stream),
            accSuccess);
  struct Seen {
    void* pinned;
    uint32_t value;
  } seen{pinned, 0};
  const void* buffers[] = {pinned};
  ASSERT_EQ(accLaunchKernelSync(
                stream,
                [](void* data) {
                  auto* s = static_cast<Seen*>(data);
                  s->value = *static_cast<uint32_t*>(s->pinned);
                  return accSuccess;
                },
                &seen, buffers, 1),
            accSuccess);
  EXPECT_EQ(seen.value, 11u);
  // A host function given device memory: only where the host addresses it.
  const void* device_buffers[] = {word};
  const accError_t touched = accLaunchKernelSync(
      stream, [](void*) { return accSuccess; }, nullptr, device_buffers, 1);
  EXPECT_EQ(touched,
            ACCGEN_TEST_HOST_ADDRESSABLE ? accSuccess : accErrorNotSupported);
  EXPECT_EQ(accFree(word), accSuccess);
  EXPECT_EQ(accFreeHost(pinned), accSuccess);
  EXPECT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Driver, ThreadsShareTheDevice) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> good(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &good] {
      accStream_t stream = nullptr;
      if (accSetDevice(t % 2) != accSuccess ||
          accStreamCreate(&stream) != accSuccess) {
        return;
      }
      for (int round = 0; round < 20; ++round) {
        uint32_t* words = nullptr;
        if (accMalloc(reinterpret_cast<void**>(&words), 256 * 4) !=
            accSuccess) {
          return;
        }
        const uint32_t value = static_cast<uint32_t>(t * 1000 + round);
        uint32_t back[256] = {};
        if (fill(words, 256, value, stream) == accSuccess &&
            accMemcpyAsync(back, words, sizeof(back), accMemcpyDeviceToHost,
                           stream) == accSuccess &&
            std::all_of(std::begin(back), std::end(back),
                        [&](uint32_t v) { return v == value; })) {
          ++good[t];
        }
        (void)accFree(words);
      }
      (void)accStreamDestroy(stream);
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(good[t], 20) << "thread " << t;
  }
}

TEST(Driver, GraphsAreOptional) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  const accError_t begun =
      accStreamBeginCapture(stream, accStreamCaptureModeGlobal);
  EXPECT_TRUE(begun == accSuccess || begun == accErrorNotSupported)
      << accGetErrorName(begun);
  if (begun == accSuccess) {
    // A device function is recorded, not run, and replays.
    uint32_t* word = nullptr;
    ASSERT_EQ(accMalloc(reinterpret_cast<void**>(&word), 4), accSuccess);
    ASSERT_EQ(fill(word, 1, 9, stream), accSuccess);
    accGraph_t graph = nullptr;
    ASSERT_EQ(accStreamEndCapture(stream, &graph), accSuccess);
    accGraphExec_t exec = nullptr;
    ASSERT_EQ(accGraphInstantiate(&exec, graph), accSuccess);
    ASSERT_EQ(fill(word, 1, 0, stream), accSuccess);
    ASSERT_EQ(accGraphLaunch(exec, stream), accSuccess);
    ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
    EXPECT_EQ(readWord(word), 9u);
    EXPECT_EQ(accGraphExecDestroy(exec), accSuccess);
    EXPECT_EQ(accGraphDestroy(graph), accSuccess);
    EXPECT_EQ(accFree(word), accSuccess);
  }
  accStreamCaptureStatus status = accStreamCaptureStatusActive;
  EXPECT_EQ(accStreamGetCaptureInfo(stream, &status, nullptr), accSuccess);
  EXPECT_EQ(status, accStreamCaptureStatusNone);
  EXPECT_EQ(accStreamDestroy(stream), accSuccess);
}

}  // namespace
}  // namespace accgen::driver_test
