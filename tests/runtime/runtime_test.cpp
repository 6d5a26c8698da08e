// The backend runtime, tested directly against libtorch: a program linked
// with the test backend's core library (libtorch_rtest.so, built by
// accgen_add_backend from the runtime's sources and backend.cpp) and torch,
// without Python. The library registers the device when it loads.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>

#include <accgen/runtime/Driver.h>
#include <accgen/runtime/Registration.h>
#include <accgen/runtime/Runtime.h>
#include <accgen/runtime/Tuning.h>

namespace accgen::runtime {
namespace {

const c10::Device kDevice0(c10::DeviceType::PrivateUse1, 0);
const c10::Device kDevice1(c10::DeviceType::PrivateUse1, 1);

std::int64_t allocatedBytes(c10::DeviceIndex device) {
  return getDeviceAllocator()
      ->getDeviceStats(device)
      .allocated_bytes[static_cast<std::size_t>(
          c10::CachingAllocator::StatType::AGGREGATE)]
      .current;
}

TEST(Registration, TheLibraryClaimsTheDeviceTypeWhenItLoads) {
  EXPECT_TRUE(ownsDevice());
  EXPECT_EQ(deviceTakenBy(), "");
  EXPECT_EQ(c10::get_privateuse1_backend(), "rtest");
  EXPECT_EQ(c10::Device("rtest:1"), kDevice1);
}

TEST(Config, TheTorchVersionTestFollowsTorchsOwnMacros) {
  static_assert(
      ACCGEN_TORCH_AT_LEAST(TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
  static_assert(ACCGEN_TORCH_AT_LEAST(2, 0));
  static_assert(!ACCGEN_TORCH_AT_LEAST(TORCH_VERSION_MAJOR + 1, 0));
  static_assert(
      !ACCGEN_TORCH_AT_LEAST(TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR + 1));
  EXPECT_STREQ(kDeviceName, "rtest");
  EXPECT_EQ(kDefaultDeviceCount, 2);
}

TEST(Devices, CountGuardAndErrors) {
  EXPECT_EQ(deviceCount(), 2);
  {
    const c10::DeviceGuard guard(kDevice1);
    EXPECT_EQ(currentDevice(), 1);
  }
  EXPECT_EQ(currentDevice(), 0);
  try {
    setDevice(5);
    FAIL() << "setDevice(5) did not throw";
  } catch (const c10::Error& error) {
    EXPECT_NE(std::string(error.what()).find("rtest"), std::string::npos)
        << error.what();
  }
}

TEST(Tensors, RoundTripThroughDeviceMemory) {
  const at::Tensor host = at::arange(12, at::kFloat).reshape({3, 4});
  const at::Tensor device = host.to(kDevice1);
  EXPECT_EQ(device.device(), kDevice1);
  EXPECT_TRUE(at::equal(device.cpu(), host));
  // A strided view copied back, and a copy across devices.
  EXPECT_TRUE(at::equal(device.t().cpu(), host.t()));
  EXPECT_TRUE(at::equal(device.to(kDevice0).cpu(), host));
}

// Note [Parameters keep their identity across .to()] in src/Builtin.cpp:
// c10's own rule leaves the device out (while it holds, the runtime's
// kernel of the operator is what keeps nn.Module parameters across .to()),
// and the kernel counts the device as a backend like the CPU.
TEST(Tensors, DeviceTensorsShallowCopyLikeCpuOnes) {
  const at::Tensor cpu = at::ones({2, 3});
  const at::Tensor device = cpu.to(kDevice0);
  EXPECT_FALSE(cpu.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(
      device.key_set()))
      << "c10 now counts PrivateUse1 itself: the runtime's "
         "_has_compatible_shallow_copy_type kernel can go";
  EXPECT_TRUE(at::_has_compatible_shallow_copy_type(cpu, device));
  EXPECT_TRUE(at::_has_compatible_shallow_copy_type(device, cpu));
  EXPECT_TRUE(at::_has_compatible_shallow_copy_type(device, device.t()));
  EXPECT_TRUE(at::_has_compatible_shallow_copy_type(device, cpu.to(kDevice1)));
  // Sparse with sparse, never with dense.
  const at::Tensor sparse = device.to_sparse();
  EXPECT_TRUE(at::_has_compatible_shallow_copy_type(sparse, cpu.to_sparse()));
  EXPECT_FALSE(at::_has_compatible_shallow_copy_type(sparse, device));
  EXPECT_FALSE(at::_has_compatible_shallow_copy_type(cpu, sparse));
  // Quantized with nothing but its own kind.
  const at::Tensor quantized =
      at::quantize_per_tensor(device, 0.1, 0, at::kQInt8);
  EXPECT_FALSE(at::_has_compatible_shallow_copy_type(quantized, device));
  EXPECT_FALSE(at::_has_compatible_shallow_copy_type(cpu, quantized));
  // What nn.Module._apply then does: the object keeps its identity and
  // moves to the device.
  at::Tensor param = at::ones({2, 3}).set_requires_grad(true);
  const c10::TensorImpl* before = param.unsafeGetTensorImpl();
  param.set_data(param.detach().to(kDevice0));
  EXPECT_EQ(param.unsafeGetTensorImpl(), before);
  EXPECT_EQ(param.device(), kDevice0);
  EXPECT_TRUE(param.requires_grad());
}

TEST(Operators, EmulatedAndFallbackMatchTheCpu) {
  const at::Tensor a = at::randn({5, 7});
  const at::Tensor b = at::randn({5, 7});
  const at::Tensor da = a.to(kDevice0);
  const at::Tensor db = b.to(kDevice0);
  // mul is emulated (backend.cpp), add falls back to the CPU.
  EXPECT_TRUE(at::allclose((da * db).cpu(), a * b));
  EXPECT_TRUE(at::allclose((da + db).cpu(), a + b));
  at::Tensor out = at::empty({5, 7}, at::TensorOptions().device(kDevice0));
  at::mul_out(out, da, db);
  EXPECT_TRUE(at::allclose(out.cpu(), a * b));
  EXPECT_EQ(
      at::ones({3}, at::TensorOptions().device(kDevice1)).sum().item<float>(),
      3.0f);
}

TEST(Generators, SeededDeviceRandomnessRepeats) {
  at::manual_seed(7);
  const at::Tensor first =
      at::randn({16}, at::TensorOptions().device(kDevice0)).cpu();
  at::manual_seed(7);
  const at::Tensor second =
      at::randn({16}, at::TensorOptions().device(kDevice0)).cpu();
  EXPECT_TRUE(at::equal(first, second));
  EXPECT_FALSE(at::equal(
      first, at::randn({16}, at::TensorOptions().device(kDevice0)).cpu()));
}

TEST(Tuning, TheBackendsTuningIsInForce) {
  EXPECT_EQ(tuning().streams.per_pool, 2);
  // Two streams per pool, handed out round-robin.
  const c10::Stream s0 = getStreamFromPool(0);
  const c10::Stream s1 = getStreamFromPool(0);
  const c10::Stream s2 = getStreamFromPool(0);
  EXPECT_NE(s0, s1);
  EXPECT_EQ(s0, s2);
  // Allocations are rounded to the tuned 4096 bytes.
  const std::int64_t before = allocatedBytes(0);
  const at::Tensor one = at::empty({1}, at::TensorOptions().device(kDevice0));
  EXPECT_EQ(allocatedBytes(0) - before, 4096);
  // Device properties pass through the backend's hook.
  EXPECT_STREQ(deviceProperties(1).name, "rtest device 1");
}

TEST(Tuning, ValuesOutsideTheirRangeAreRefused) {
  RuntimeTuning tuning;
  EXPECT_NO_THROW(checkTuning(tuning));
  tuning.streams.per_pool = 33;
  EXPECT_THROW(checkTuning(tuning), c10::Error);
  tuning = RuntimeTuning{};
  tuning.device_allocator.round_bytes = 1000;
  EXPECT_THROW(checkTuning(tuning), c10::Error);
  tuning = RuntimeTuning{};
  tuning.host_allocator.round_bytes = 0;
  EXPECT_THROW(checkTuning(tuning), c10::Error);
}

TEST(Allocator, FreedMemoryIsCachedAndReleasedByEmptyCache) {
  getDeviceAllocator()->emptyCache();
  const std::int64_t before = allocatedBytes(1);
  {
    const c10::DeviceGuard guard(kDevice1);
    const at::Tensor t =
        at::empty({1 << 20}, at::TensorOptions().device(kDevice1));
    EXPECT_EQ(allocatedBytes(1) - before, 4 << 20);
  }
  EXPECT_EQ(allocatedBytes(1), before);
  const auto stats = getDeviceAllocator()->getDeviceStats(1);
  const auto aggregate =
      static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  EXPECT_GE(stats.reserved_bytes[aggregate].current, 4 << 20);
  getDeviceAllocator()->emptyCache();
  EXPECT_EQ(
      getDeviceAllocator()->getDeviceStats(1).reserved_bytes[aggregate].current,
      0);
}

// Note [Recently freed blocks]: a request takes the block of its size freed
// last; the best fit wins over it, among the recent blocks and the ones
// pushed out of them alike; empty_cache() releases both.
TEST(Allocator, ARequestTakesTheBlockOfItsSizeFreedLast) {
  if (!tuning().device_allocator.caching) {
    GTEST_SKIP() << "the cache is off";
  }
  getDeviceAllocator()->emptyCache();
  const c10::DeviceGuard guard(kDevice1);
  const auto options = at::TensorOptions().device(kDevice1);
  // Sizes in rounding units: a block of two serves a request of one.
  const auto unit =
      static_cast<std::int64_t>(tuning().device_allocator.round_bytes);
  const auto block = [&](std::int64_t units) {
    return at::empty({units * unit}, options.dtype(at::kByte));
  };
  // The higher address goes last, so that the order by address (the
  // lowest first) would give the other one.
  at::Tensor a = block(1);
  at::Tensor b = block(1);
  if (a.data_ptr() > b.data_ptr()) {
    std::swap(a, b);
  }
  void* const a_data = a.data_ptr();
  void* const b_data = b.data_ptr();
  a.reset();
  b.reset();
  at::Tensor c = block(1);
  at::Tensor d = block(1);
  EXPECT_EQ(c.data_ptr(), b_data) << "the block freed last comes first";
  EXPECT_EQ(d.data_ptr(), a_data);

  // c goes first, then enough larger blocks to push it out of the recent
  // ones; a request of its size takes it rather than a larger recent one.
  void* const c_data = c.data_ptr();
  c.reset();
  std::vector<at::Tensor> larger;
  for (int i = 0; i < 24; ++i) {
    larger.push_back(block(2));
  }
  larger.clear();
  at::Tensor e = block(1);
  EXPECT_EQ(e.data_ptr(), c_data) << "the exact fit, pushed out of the recent";
  // No block of its size is left: a larger one within the reuse ratio
  // serves, rather than the driver.
  const auto from_driver =
      getDeviceAllocator()->getDeviceStats(1).num_device_alloc;
  at::Tensor f = block(1);
  EXPECT_EQ(getDeviceAllocator()->getDeviceStats(1).num_device_alloc,
            from_driver);
  e.reset();
  f.reset();
  d.reset();

  const auto aggregate =
      static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  EXPECT_GT(
      getDeviceAllocator()->getDeviceStats(1).reserved_bytes[aggregate].current,
      0);
  getDeviceAllocator()->emptyCache();
  EXPECT_EQ(
      getDeviceAllocator()->getDeviceStats(1).reserved_bytes[aggregate].current,
      0)
      << "recent blocks are released too";
}

TEST(Allocator, WithoutCachingFreedBlocksReturnToTheDriver) {
  if (tuning().device_allocator.caching) {
    GTEST_SKIP() << "runs as runtime_tests_no_caching (RTEST_NO_CACHING=1)";
  }
  const auto aggregate =
      static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const auto frees = getDeviceAllocator()->getDeviceStats(0).num_device_free;
  {
    const at::Tensor t =
        at::empty({1 << 18}, at::TensorOptions().device(kDevice0));
    EXPECT_GE(getDeviceAllocator()
                  ->getDeviceStats(0)
                  .reserved_bytes[aggregate]
                  .current,
              1 << 20);
  }
  const auto stats = getDeviceAllocator()->getDeviceStats(0);
  EXPECT_EQ(stats.reserved_bytes[aggregate].current, 0);
  EXPECT_EQ(stats.num_device_free, frees + 1);
}

// Many threads at once allocate, copy and launch, each on streams of both
// priorities on its device, wait on one another's events, draw random
// numbers, free tensors another thread made, and empty the cache while the
// others allocate: every path the runtime shares between threads (stream
// pools, the caching allocator with recorded streams, events, generators,
// the driver). scripts/test_emulator_sanitizers.sh runs it under
// ThreadSanitizer and AddressSanitizer.
TEST(Concurrency, ManyThreadsAllocateCopyAndLaunchOnSeveralStreams) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 30;
  getDeviceAllocator()->emptyCache();
  const std::int64_t before0 = allocatedBytes(0);
  const std::int64_t before1 = allocatedBytes(1);
  std::atomic<int> wrong{0};
  std::atomic<int> errors{0};
  std::mutex handoff_mutex;
  std::deque<at::Tensor> handoff;  // freed by whichever thread comes next
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        const c10::Device device(c10::DeviceType::PrivateUse1,
                                 static_cast<c10::DeviceIndex>(t % 2));
        const c10::DeviceGuard device_guard(device);
        const auto on_device = at::TensorOptions().device(device);
        for (int round = 0; round < kRounds; ++round) {
          const c10::Stream stream =
              getStreamFromPool(device.index(), round % 2 == 0 ? 0 : -1);
          const c10::StreamGuard stream_guard(stream);
          const at::Tensor host =
              at::full({16 + round, 9}, static_cast<float>(t * 100 + round));
          const at::Tensor d = host.to(device);
          at::Tensor product = d * d;          // emulated, on `stream`
          const at::Tensor sum = product + d;  // the CPU fallback
          // Another stream uses the product after an event of this one.
          const c10::Stream other = getStreamFromPool(device.index());
          c10::Event done(c10::DeviceType::PrivateUse1);
          done.record(stream);
          done.block(other);
          recordStream(product.storage().data_ptr(), other);
          if (!at::equal(sum.cpu(), host * host + host)) {
            ++wrong;
          }
          const at::Tensor noise = at::randn({32}, on_device);
          if (noise.cpu().isnan().any().item<bool>()) {
            ++wrong;
          }
          {
            const std::lock_guard<std::mutex> lock(handoff_mutex);
            handoff.push_back(std::move(product));
            if (handoff.size() > 5) {
              handoff.pop_front();
            }
          }
          if (t == 0 && round % 7 == 0) {
            getDeviceAllocator()->emptyCache();
          }
        }
        getCurrentStream(device.index()).synchronize();
      } catch (const std::exception& error) {
        ADD_FAILURE() << "thread " << t << ": " << error.what();
        ++errors;
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  handoff.clear();
  // Blocks used on a recorded stream return once its work is done: empty
  // the cache after the devices finished everything.
  for (c10::DeviceIndex device = 0; device < 2; ++device) {
    const c10::DeviceGuard guard(
        c10::Device(c10::DeviceType::PrivateUse1, device));
    c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)
        ->synchronizeDevice(device);
  }
  getDeviceAllocator()->emptyCache();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(allocatedBytes(0), before0);
  EXPECT_EQ(allocatedBytes(1), before1);
}

// Holds a stream until the flag is set (a kernel without buffers: queued).
accError_t waitForFlag(void* flag) {
  while (!static_cast<std::atomic<bool>*>(flag)->load()) {
    std::this_thread::yield();
  }
  return accSuccess;
}

struct BorrowedArgs {
  const int* in;
  int* out;
  int ran = 0;
};

accError_t copyOne(BorrowedArgs& args) {
  *args.out = *args.in;
  ++args.ran;
  return accSuccess;
}

TEST(Launch, BorrowedArgumentsRunAtOnceOnAnIdleStreamAndAreOwnedToQueue) {
  const c10::DeviceGuard guard(kDevice0);
  const at::Tensor buffer =
      at::zeros({4}, at::TensorOptions().dtype(at::kInt).device(kDevice0));
  const void* buffers[] = {buffer.storage().data()};
  accStream_t stream = currentNativeStream(0);
  const int in = 7;
  int out = 0;
  int owned_made = 0;
  BorrowedArgs lent{&in, &out};
  // Idle: the kernel runs on the caller's arguments before the call
  // returns, and no owned copy is made.
  launchBorrowing<BorrowedArgs, &copyOne>(stream, lent, buffers, [&] {
    ++owned_made;
    return std::make_unique<BorrowedArgs>(lent);
  });
  EXPECT_EQ(lent.ran, 1);
  EXPECT_EQ(out, 7);
  EXPECT_EQ(owned_made, 0);

  // Busy: the call returns before the kernel ran, which runs on the owned
  // copy once the stream gets to it.
  std::atomic<bool> release{false};
  // Released on every path, so that a failure below cannot hang the stream.
  struct Release {
    std::atomic<bool>& flag;
    ~Release() { flag = true; }
  } release_at_exit{release};
  ACCGEN_CHECK(accLaunchKernel(stream, &waitForFlag, &release, nullptr, 0));
  const int later = 9;
  BorrowedArgs queued{&later, &out};
  launchBorrowing<BorrowedArgs, &copyOne>(stream, queued, buffers, [&] {
    ++owned_made;
    return std::make_unique<BorrowedArgs>(queued);
  });
  EXPECT_EQ(owned_made, 1);
  EXPECT_EQ(queued.ran, 0);
  EXPECT_EQ(out, 7);
  release = true;
  ACCGEN_CHECK(accStreamSynchronize(stream));
  EXPECT_EQ(out, 9);
  EXPECT_EQ(queued.ran, 0);  // the owned copy ran, not the lent arguments
}

}  // namespace
}  // namespace accgen::runtime
