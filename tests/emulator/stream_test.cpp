// Streams and kernel launches: asynchrony, order within a stream,
// concurrency across streams and host threads, priorities, destruction,
// cross-stream waits through events and sticky kernel errors.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_util.h"

namespace accgen::emulator::test {
namespace {

TEST(Stream, CreateQueryDestroy) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(accStreamQuery(stream), accSuccess) << "no work yet";
  int device = -1;
  ASSERT_EQ(accStreamGetDevice(stream, &device), accSuccess);
  EXPECT_EQ(device, 0);
  int priority = 99;
  ASSERT_EQ(accStreamGetPriority(stream, &priority), accSuccess);
  EXPECT_EQ(priority, 0);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  EXPECT_EQ(accStreamDestroy(stream), accErrorInvalidHandle) << "destroyed";
  EXPECT_EQ(accStreamQuery(stream), accErrorInvalidHandle);
  EXPECT_EQ(accStreamSynchronize(stream), accErrorInvalidHandle);
  EXPECT_EQ(accStreamGetDevice(stream, &device), accErrorInvalidHandle);
  EXPECT_EQ(accStreamCreate(nullptr), accErrorInvalidValue);
}

TEST(Stream, BadArguments) {
  int dummy = 0;
  auto bogus = reinterpret_cast<accStream_t>(&dummy);
  EXPECT_EQ(accStreamQuery(bogus), accErrorInvalidHandle);
  EXPECT_EQ(accStreamSynchronize(bogus), accErrorInvalidHandle);
  EXPECT_EQ(accStreamDestroy(bogus), accErrorInvalidHandle);
  EXPECT_EQ(accStreamDestroy(nullptr), accErrorInvalidHandle);
  int value = 0;
  EXPECT_EQ(accStreamGetDevice(bogus, &value), accErrorInvalidHandle);
  EXPECT_EQ(accStreamGetPriority(bogus, &value), accErrorInvalidHandle);
  EXPECT_EQ(accStreamGetDevice(nullptr, nullptr), accErrorInvalidValue);
  EXPECT_EQ(accStreamGetPriority(nullptr, nullptr), accErrorInvalidValue);
  EXPECT_EQ(launch(bogus, [] { return accSuccess; }), accErrorInvalidHandle);
  EXPECT_EQ(accLaunchKernel(nullptr, nullptr, nullptr, nullptr, 0),
            accErrorInvalidValue);
  EXPECT_EQ(accLaunchKernel(nullptr, runClosure, nullptr, nullptr, 1),
            accErrorInvalidValue);
  accStream_t stream = nullptr;
  EXPECT_EQ(accStreamCreateWithPriority(&stream, 1, 0), accErrorInvalidValue)
      << "unknown flags";
  EXPECT_EQ(accGetDefaultStream(0, nullptr), accErrorInvalidValue);
  EXPECT_EQ(accGetDefaultStream(deviceCount(), &stream), accErrorInvalidDevice);
  EXPECT_EQ(accGetDefaultStream(-1, &stream), accErrorInvalidDevice);
  EXPECT_EQ(accDeviceGetStreamPriorityRange(nullptr, &value),
            accErrorInvalidValue);
}

TEST(Stream, LaunchRejectsUnknownBuffers) {
  int local = 0;
  const void* buffers[] = {&local};
  EXPECT_EQ(accLaunchKernel(nullptr, runClosure, nullptr, buffers, 1),
            accErrorInvalidValue);
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, 16), accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
  buffers[0] = dev;
  EXPECT_EQ(accLaunchKernel(nullptr, runClosure, nullptr, buffers, 1),
            accErrorInvalidValue)
      << "freed memory";
}

TEST(Stream, DefaultStreams) {
  accStream_t default0 = nullptr;
  ASSERT_EQ(accGetDefaultStream(0, &default0), accSuccess);
  ASSERT_NE(default0, nullptr);
  accStream_t again = nullptr;
  ASSERT_EQ(accGetDefaultStream(0, &again), accSuccess);
  EXPECT_EQ(default0, again);
  int device = -1;
  ASSERT_EQ(accStreamGetDevice(nullptr, &device), accSuccess);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(accStreamDestroy(default0), accErrorInvalidHandle)
      << "default streams cannot be destroyed";
  if (deviceCount() >= 2) {
    accStream_t default1 = nullptr;
    ASSERT_EQ(accGetDefaultStream(1, &default1), accSuccess);
    EXPECT_NE(default1, default0);
    ASSERT_EQ(accStreamGetDevice(default1, &device), accSuccess);
    EXPECT_EQ(device, 1);
    ASSERT_EQ(accSetDevice(1), accSuccess);
    ASSERT_EQ(accStreamGetDevice(nullptr, &device), accSuccess);
    EXPECT_EQ(device, 1) << "NULL is the current device's default stream";
    accStream_t created = nullptr;
    ASSERT_EQ(accStreamCreate(&created), accSuccess);
    ASSERT_EQ(accStreamGetDevice(created, &device), accSuccess);
    EXPECT_EQ(device, 1) << "streams belong to the current device";
    ASSERT_EQ(accStreamDestroy(created), accSuccess);
    ASSERT_EQ(accSetDevice(0), accSuccess);
  }
}

TEST(Stream, Priorities) {
  int least = 99;
  int greatest = 99;
  ASSERT_EQ(accDeviceGetStreamPriorityRange(&least, &greatest), accSuccess);
  EXPECT_EQ(least, 0);
  EXPECT_EQ(greatest, -2);
  for (int requested : {-5, -2, -1, 0, 3}) {
    accStream_t stream = nullptr;
    ASSERT_EQ(accStreamCreateWithPriority(&stream, 0, requested), accSuccess);
    int priority = 99;
    ASSERT_EQ(accStreamGetPriority(stream, &priority), accSuccess);
    EXPECT_EQ(priority, std::clamp(requested, greatest, least))
        << "requested " << requested;
    ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  }
}

TEST(Stream, LaunchReturnsBeforeTheKernelRuns) {
  auto gate = std::make_shared<Gate>();
  std::atomic<bool> ran{false};
  ASSERT_EQ(launch(nullptr,
                   [gate, &ran] {
                     // Waits for the host, which opens the gate only after
                     // accLaunchKernel returned: a synchronous launch would
                     // time out here.
                     if (!gate->wait()) {
                       return accErrorNotReady;
                     }
                     ran.store(true);
                     return accSuccess;
                   }),
            accSuccess);
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(accStreamQuery(nullptr), accErrorNotReady);
  gate->open();
  ASSERT_EQ(accStreamSynchronize(nullptr), accSuccess);
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(accStreamQuery(nullptr), accSuccess);
}

// Note [Waiting threads run queued work]: a kernel queued while the worker
// sleeps runs on the thread that synchronizes, if that thread gets to it
// first; either way each kernel runs once, in order, before the
// synchronize returns.
TEST(Stream, ASynchronizingThreadRunsWorkTheIdleWorkerHasNotTaken) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  constexpr int kRounds = 100;
  std::vector<std::thread::id> ran_on;
  int on_caller = 0;
  for (int i = 0; i < kRounds; ++i) {
    // Longer than the worker's spin: it sleeps when the launch comes.
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    ASSERT_EQ(launch(stream,
                     [&ran_on] {
                       ran_on.push_back(std::this_thread::get_id());
                       return accSuccess;
                     }),
              accSuccess);
    ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
    ASSERT_EQ(ran_on.size(), static_cast<std::size_t>(i + 1));
    on_caller += ran_on.back() == std::this_thread::get_id() ? 1 : 0;
  }
  EXPECT_GT(on_caller, 0) << "the caller never ran a kernel it waited for";
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

// Note [Small work on an idle stream]: a kernel touching at most 1 MiB of
// device memory, launched onto an idle stream, has run when the launch
// returns; one that waits outside its stream, one over 1 MiB and one that
// touches no device memory are queued.
TEST(Stream, SmallKernelOnAnIdleStreamRunsWhereLaunched) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  void* small = nullptr;
  void* large = nullptr;
  ASSERT_EQ(accMalloc(&small, 4096), accSuccess);
  ASSERT_EQ(accMalloc(&large, (size_t{1} << 20) + 1), accSuccess);
  std::thread::id ran_on;
  ASSERT_EQ(launch(stream,
                   [&ran_on] {
                     ran_on = std::this_thread::get_id();
                     return accSuccess;
                   },
                   {small}),
            accSuccess);
  EXPECT_EQ(ran_on, std::this_thread::get_id()) << "ran before the return";
  EXPECT_EQ(accStreamQuery(stream), accSuccess);

  auto queued = [&](std::vector<const void*> buffers, unsigned flags) {
    auto gate = std::make_shared<Gate>();
    // The kernel waits for the host, which opens the gate only after the
    // launch returned: run where launched, it would time out.
    EXPECT_EQ(holdStream(stream, gate, std::move(buffers), flags), accSuccess);
    const bool pending = accStreamQuery(stream) == accErrorNotReady;
    gate->open();
    EXPECT_EQ(accStreamSynchronize(stream), accSuccess);
    return pending;
  };
  EXPECT_TRUE(queued({small}, accLaunchWaitsOutside));
  EXPECT_TRUE(queued({large}, accLaunchDefault));
  EXPECT_TRUE(queued({}, accLaunchDefault));

  EXPECT_EQ(accLaunchKernelEx(stream, runClosure, nullptr, nullptr, 0, 0x8),
            accErrorInvalidValue)
      << "unknown flags";
  ASSERT_EQ(accFree(small), accSuccess);
  ASSERT_EQ(accFree(large), accSuccess);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

// A kernel run where it was launched reports its error like a queued one:
// sticky, at the next synchronize.
TEST(Stream, AKernelRunWhereLaunchedLeavesItsErrorSticky) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, 64), accSuccess);
  ASSERT_EQ(launch(stream, [] { return accErrorInvalidValue; }, {dev}),
            accSuccess);
  EXPECT_EQ(accStreamSynchronize(stream), accErrorInvalidValue);
  EXPECT_EQ(accStreamSynchronize(stream), accSuccess) << "reported once";
  ASSERT_EQ(accFree(dev), accSuccess);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Stream, WorkRunsInSubmissionOrder) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, sizeof(int)), accSuccess);
  ASSERT_EQ(accMemsetAsync(dev, 0, sizeof(int), stream), accSuccess);
  std::vector<int> order;  // touched only by the stream's worker
  std::vector<int> seen;
  constexpr int kKernels = 2000;
  for (int i = 0; i < kKernels; ++i) {
    // Each kernel checks the device value the previous one left, then bumps it.
    ASSERT_EQ(launch(stream,
                     [i, dev, &order, &seen] {
                       auto* value = static_cast<int*>(dev);
                       seen.push_back(*value);
                       *value = i + 1;
                       order.push_back(i);
                       return accSuccess;
                     },
                     {dev}),
              accSuccess);
  }
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  ASSERT_EQ(order.size(), static_cast<size_t>(kKernels));
  for (int i = 0; i < kKernels; ++i) {
    ASSERT_EQ(order[i], i);
    ASSERT_EQ(seen[i], i);
  }
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Stream, StreamsRunConcurrently) {
  // Two kernels on different streams wait for each other: if the streams
  // were serialized, the first would time out.
  accStream_t first = nullptr;
  accStream_t second = nullptr;
  ASSERT_EQ(accStreamCreate(&first), accSuccess);
  ASSERT_EQ(accStreamCreate(&second), accSuccess);
  auto a = std::make_shared<Gate>();
  auto b = std::make_shared<Gate>();
  ASSERT_EQ(launch(first,
                   [a, b] {
                     a->open();
                     return b->wait() ? accSuccess : accErrorNotReady;
                   }),
            accSuccess);
  ASSERT_EQ(launch(second,
                   [a, b] {
                     b->open();
                     return a->wait() ? accSuccess : accErrorNotReady;
                   }),
            accSuccess);
  EXPECT_EQ(accStreamSynchronize(first), accSuccess);
  EXPECT_EQ(accStreamSynchronize(second), accSuccess);
  ASSERT_EQ(accStreamDestroy(first), accSuccess);
  ASSERT_EQ(accStreamDestroy(second), accSuccess);
}

TEST(Stream, DevicesRunConcurrently) {
  if (deviceCount() < 2) {
    GTEST_SKIP() << "needs two devices";
  }
  accStream_t on0 = nullptr;
  accStream_t on1 = nullptr;
  ASSERT_EQ(accGetDefaultStream(0, &on0), accSuccess);
  ASSERT_EQ(accGetDefaultStream(1, &on1), accSuccess);
  auto a = std::make_shared<Gate>();
  auto b = std::make_shared<Gate>();
  ASSERT_EQ(launch(on0,
                   [a, b] {
                     a->open();
                     return b->wait() ? accSuccess : accErrorNotReady;
                   }),
            accSuccess);
  ASSERT_EQ(launch(on1,
                   [a, b] {
                     b->open();
                     return a->wait() ? accSuccess : accErrorNotReady;
                   }),
            accSuccess);
  EXPECT_EQ(accStreamSynchronize(on0), accSuccess);
  EXPECT_EQ(accStreamSynchronize(on1), accSuccess);
}

TEST(Stream, DestroyDrainsPendingWork) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(
        launch(stream,
               [&ran] {
                 std::this_thread::sleep_for(std::chrono::milliseconds(5));
                 ran.fetch_add(1);
                 return accSuccess;
               }),
        accSuccess);
  }
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
  EXPECT_EQ(ran.load(), 5);
}

TEST(Stream, WaitEventOrdersWorkAcrossStreams) {
  accStream_t producer = nullptr;
  accStream_t consumer = nullptr;
  ASSERT_EQ(accStreamCreate(&producer), accSuccess);
  ASSERT_EQ(accStreamCreate(&consumer), accSuccess);
  accEvent_t ready = nullptr;
  ASSERT_EQ(accEventCreateWithFlags(&ready, accEventDisableTiming), accSuccess);
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, sizeof(int)), accSuccess);
  ASSERT_EQ(accMemset(dev, 0, sizeof(int)), accSuccess);

  ASSERT_EQ(launch(producer,
                   [dev] {
                     std::this_thread::sleep_for(std::chrono::milliseconds(50));
                     *static_cast<int*>(dev) = 42;
                     return accSuccess;
                   },
                   {dev}),
            accSuccess);
  ASSERT_EQ(accEventRecord(ready, producer), accSuccess);
  ASSERT_EQ(accStreamWaitEvent(consumer, ready, 0), accSuccess);
  std::atomic<int> observed{-1};
  ASSERT_EQ(launch(consumer,
                   [dev, &observed] {
                     observed.store(*static_cast<int*>(dev));
                     return accSuccess;
                   },
                   {dev}),
            accSuccess);
  ASSERT_EQ(accStreamSynchronize(consumer), accSuccess);
  EXPECT_EQ(observed.load(), 42) << "the consumer ran before the producer";

  // A wait on a never-recorded event is a no-op; flags must be zero.
  accEvent_t unrecorded = nullptr;
  ASSERT_EQ(accEventCreate(&unrecorded), accSuccess);
  EXPECT_EQ(accStreamWaitEvent(consumer, unrecorded, 0), accSuccess);
  EXPECT_EQ(accStreamWaitEvent(consumer, ready, 1), accErrorInvalidValue);
  int dummy = 0;
  EXPECT_EQ(
      accStreamWaitEvent(consumer, reinterpret_cast<accEvent_t>(&dummy), 0),
      accErrorInvalidHandle);
  EXPECT_EQ(accStreamWaitEvent(reinterpret_cast<accStream_t>(&dummy), ready, 0),
            accErrorInvalidHandle);

  ASSERT_EQ(accEventDestroy(unrecorded), accSuccess);
  ASSERT_EQ(accEventDestroy(ready), accSuccess);
  ASSERT_EQ(accStreamDestroy(producer), accSuccess);
  ASSERT_EQ(accStreamDestroy(consumer), accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Stream, WaitEventAcrossDevices) {
  if (deviceCount() < 2) {
    GTEST_SKIP() << "needs two devices";
  }
  accStream_t on0 = nullptr;
  accStream_t on1 = nullptr;
  ASSERT_EQ(accGetDefaultStream(0, &on0), accSuccess);
  ASSERT_EQ(accGetDefaultStream(1, &on1), accSuccess);
  accEvent_t event = nullptr;
  ASSERT_EQ(accEventCreate(&event), accSuccess);
  std::atomic<int> step{0};
  ASSERT_EQ(launch(on0,
                   [&step] {
                     std::this_thread::sleep_for(std::chrono::milliseconds(30));
                     step.store(1);
                     return accSuccess;
                   }),
            accSuccess);
  ASSERT_EQ(accEventRecord(event, on0), accSuccess);
  ASSERT_EQ(accStreamWaitEvent(on1, event, 0), accSuccess);
  std::atomic<int> observed{-1};
  ASSERT_EQ(launch(on1,
                   [&step, &observed] {
                     observed.store(step.load());
                     return accSuccess;
                   }),
            accSuccess);
  ASSERT_EQ(accStreamSynchronize(on1), accSuccess);
  EXPECT_EQ(observed.load(), 1);
  ASSERT_EQ(accEventDestroy(event), accSuccess);
}

TEST(Stream, KernelErrorIsStickyUntilReportedOnce) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  ASSERT_EQ(launch(stream, [] { return accErrorInvalidValue; }), accSuccess)
      << "the launch itself succeeds";
  std::atomic<bool> later_ran{false};
  ASSERT_EQ(launch(stream,
                   [&later_ran] {
                     later_ran.store(true);
                     return accSuccess;
                   }),
            accSuccess);
  EXPECT_EQ(accStreamSynchronize(stream), accErrorInvalidValue)
      << "the kernel's own code";
  EXPECT_TRUE(later_ran.load()) << "later work still runs";
  EXPECT_EQ(accStreamSynchronize(stream), accSuccess) << "reported once";
  EXPECT_EQ(accStreamQuery(stream), accSuccess);

  // The first error wins until it is reported.
  ASSERT_EQ(launch(stream, [] { return accErrorMemoryAllocation; }),
            accSuccess);
  ASSERT_EQ(launch(stream, [] { return accErrorInvalidDevice; }), accSuccess);
  EXPECT_EQ(accStreamSynchronize(stream), accErrorMemoryAllocation);

  // A thrown exception or an unknown code is a launch failure.
  ASSERT_EQ(
      launch(stream, []() -> accError_t { throw std::runtime_error("boom"); }),
      accSuccess);
  EXPECT_EQ(accStreamSynchronize(stream), accErrorLaunchFailure);
  ASSERT_EQ(launch(stream, [] { return static_cast<accError_t>(77); }),
            accSuccess);
  EXPECT_EQ(accStreamSynchronize(stream), accErrorLaunchFailure);

  // Query reports it too, once the kernel ran.
  ASSERT_EQ(launch(stream, [] { return accErrorInvalidHandle; }), accSuccess);
  while (true) {
    const accError_t state = accStreamQuery(stream);
    if (state != accErrorNotReady) {
      EXPECT_EQ(state, accErrorInvalidHandle);
      break;
    }
  }
  EXPECT_EQ(accStreamQuery(stream), accSuccess);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Stream, DeviceSynchronizeReportsStickyErrors) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  ASSERT_EQ(launch(stream, [] { return accErrorLaunchFailure; }), accSuccess);
  EXPECT_EQ(accDeviceSynchronize(), accErrorLaunchFailure);
  EXPECT_EQ(accDeviceSynchronize(), accSuccess);
  EXPECT_EQ(accStreamSynchronize(stream), accSuccess)
      << "cleared when reported";
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

// The driver contract: a stream that waits for failed work fails too, both
// when the wait is queued before the failure and when it comes after.
TEST(Stream, AStreamThatWaitsForFailedWorkFailsToo) {
  accStream_t failing = nullptr;
  accStream_t waiting = nullptr;
  accStream_t bystander = nullptr;
  ASSERT_EQ(accStreamCreate(&failing), accSuccess);
  ASSERT_EQ(accStreamCreate(&waiting), accSuccess);
  ASSERT_EQ(accStreamCreate(&bystander), accSuccess);
  accEvent_t done = nullptr;
  ASSERT_EQ(accEventCreateWithFlags(&done, accEventDisableTiming), accSuccess);
  // Queued before the failure: the wait item fails when it runs.
  ASSERT_EQ(launch(failing,
                   [] {
                     std::this_thread::sleep_for(std::chrono::milliseconds(20));
                     return accErrorLaunchFailure;
                   }),
            accSuccess);
  ASSERT_EQ(accEventRecord(done, failing), accSuccess);
  ASSERT_EQ(accStreamWaitEvent(waiting, done, 0), accSuccess);
  ASSERT_EQ(launch(waiting, [] { return accSuccess; }), accSuccess);
  EXPECT_EQ(accStreamSynchronize(waiting), accErrorLaunchFailure);
  EXPECT_EQ(accStreamSynchronize(waiting), accSuccess) << "reported once";
  // After the failure: the wait fails the stream at once.
  ASSERT_EQ(accStreamWaitEvent(bystander, done, 0), accSuccess);
  EXPECT_EQ(accStreamSynchronize(bystander), accErrorLaunchFailure);
  // Once the failing stream reported its error, waiting for it is fine.
  EXPECT_EQ(accStreamSynchronize(failing), accErrorLaunchFailure);
  ASSERT_EQ(accStreamWaitEvent(bystander, done, 0), accSuccess);
  EXPECT_EQ(accStreamSynchronize(bystander), accSuccess);
  ASSERT_EQ(accEventDestroy(done), accSuccess);
  for (accStream_t s : {failing, waiting, bystander}) {
    ASSERT_EQ(accStreamDestroy(s), accSuccess);
  }
}

TEST(Stream, SynchronousCopyReportsTheDefaultStreamsStickyError) {
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, 16), accSuccess);
  ASSERT_EQ(launch(nullptr, [] { return accErrorLaunchFailure; }), accSuccess);
  char host[16];
  EXPECT_EQ(accMemcpy(host, dev, 16, accMemcpyDeviceToHost),
            accErrorLaunchFailure);
  EXPECT_EQ(accMemcpy(host, dev, 16, accMemcpyDeviceToHost), accSuccess);
  EXPECT_EQ(accStreamSynchronize(nullptr), accSuccess);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Stream, KernelMaySynchronizeItsOwnStream) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  std::atomic<int> inner{-1};
  ASSERT_EQ(launch(stream,
                   [stream, &inner] {
                     inner.store(accStreamSynchronize(stream));
                     return accSuccess;
                   }),
            accSuccess);
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  EXPECT_EQ(inner.load(), accSuccess) << "no deadlock";
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Stream, SyncLaunchRunsInlineOnAnIdleStream) {
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, sizeof(int)), accSuccess);
  std::thread::id kernel_thread;
  ASSERT_EQ(launchSync(nullptr,
                       [&kernel_thread, dev] {
                         kernel_thread = std::this_thread::get_id();
                         *static_cast<int*>(dev) = 42;  // given access
                         return accSuccess;
                       },
                       {dev}),
            accSuccess);
  EXPECT_EQ(kernel_thread, std::this_thread::get_id());
  int host = 0;
  ASSERT_EQ(accMemcpy(&host, dev, sizeof(int), accMemcpyDeviceToHost),
            accSuccess);
  EXPECT_EQ(host, 42);
  ASSERT_EQ(accFree(dev), accSuccess);
}

TEST(Stream, SyncLaunchWaitsForQueuedWork) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  auto gate = std::make_shared<Gate>();
  std::atomic<bool> first_done{false};
  ASSERT_EQ(launch(stream,
                   [gate, &first_done] {
                     if (!gate->wait()) {
                       return accErrorNotReady;
                     }
                     first_done.store(true);
                     return accSuccess;
                   }),
            accSuccess);
  std::thread opener([gate] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate->open();
  });
  bool saw_first = false;
  std::thread::id kernel_thread;
  EXPECT_EQ(launchSync(stream,
                       [&] {
                         saw_first = first_done.load();
                         kernel_thread = std::this_thread::get_id();
                         return accSuccess;
                       }),
            accSuccess);
  opener.join();
  EXPECT_TRUE(saw_first) << "ran after the queued kernel";
  // Once the queued work finished, the caller runs it itself (its thread
  // pools are the ones the rest of its work uses).
  EXPECT_EQ(kernel_thread, std::this_thread::get_id())
      << "the caller runs it once the queued work finished";
  EXPECT_EQ(accStreamQuery(stream), accSuccess) << "nothing left behind";
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Stream, SyncLaunchReportsErrorsLikeLaunchThenSynchronize) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  EXPECT_EQ(launchSync(stream, [] { return accErrorInvalidDevice; }),
            accErrorInvalidDevice)
      << "the kernel's own code";
  EXPECT_EQ(accStreamSynchronize(stream), accSuccess) << "not left sticky";
  EXPECT_EQ(
      launchSync(stream, []() -> accError_t { throw std::runtime_error("x"); }),
      accErrorLaunchFailure);

  // An earlier kernel's sticky error comes first, and is then cleared.
  ASSERT_EQ(launch(stream, [] { return accErrorMemoryAllocation; }),
            accSuccess);
  std::atomic<bool> ran{false};
  EXPECT_EQ(launchSync(stream,
                       [&ran] {
                         ran.store(true);
                         return accErrorInvalidDevice;
                       }),
            accErrorMemoryAllocation);
  EXPECT_TRUE(ran.load()) << "the kernel still ran";
  EXPECT_EQ(accStreamSynchronize(stream), accSuccess);

  // Argument checks as for accLaunchKernel: nothing runs.
  int local = 0;
  const void* buffers[] = {&local};
  EXPECT_EQ(
      accLaunchKernelSync(stream, runBorrowedClosure, nullptr, buffers, 1),
      accErrorInvalidValue)
      << "host memory is no device buffer";
  EXPECT_EQ(accLaunchKernelSync(stream, nullptr, nullptr, nullptr, 0),
            accErrorInvalidValue);
  int dummy = 0;
  EXPECT_EQ(launchSync(reinterpret_cast<accStream_t>(&dummy),
                       [] { return accSuccess; }),
            accErrorInvalidHandle);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Stream, LaunchIfIdleRunsHereOrNotAtAll) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  void* dev = nullptr;
  ASSERT_EQ(accMalloc(&dev, sizeof(int)), accSuccess);
  const auto ifIdle = [stream](Closure& fn, std::vector<const void*> buffers) {
    return accLaunchKernelEx(stream, runBorrowedClosure, &fn, buffers.data(),
                             buffers.size(), accLaunchIfIdle);
  };

  // Idle: it runs on this thread, with access, before the call returns, and
  // its error is returned rather than left sticky.
  std::thread::id kernel_thread;
  Closure write = [&kernel_thread, dev] {
    kernel_thread = std::this_thread::get_id();
    *static_cast<int*>(dev) = 7;  // given access
    return accErrorInvalidDevice;
  };
  EXPECT_EQ(ifIdle(write, {dev}), accErrorInvalidDevice);
  EXPECT_EQ(kernel_thread, std::this_thread::get_id());
  EXPECT_EQ(accStreamSynchronize(stream), accSuccess) << "not left sticky";

  // Busy: nothing runs, now or later.
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(holdStream(stream, gate), accSuccess);
  bool ran = false;
  Closure mark = [&ran] {
    ran = true;
    return accSuccess;
  };
  EXPECT_EQ(ifIdle(mark, {dev}), accErrorNotReady);
  gate->open();
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  EXPECT_FALSE(ran) << "declined means not launched";

  // An earlier sticky error comes first, as for accLaunchKernelSync (a
  // small kernel on an idle stream runs where launched, so the stream is
  // idle again with the error pending).
  ASSERT_EQ(launch(stream, [] { return accErrorMemoryAllocation; }, {dev}),
            accSuccess);
  EXPECT_EQ(ifIdle(mark, {dev}), accErrorMemoryAllocation);
  EXPECT_TRUE(ran);
  EXPECT_EQ(accStreamSynchronize(stream), accSuccess) << "reported once";

  // Argument checks: host memory is no device buffer; the flag does not
  // combine with accLaunchWaitsOutside.
  int local = 0;
  EXPECT_EQ(ifIdle(mark, {&local}), accErrorInvalidValue);
  EXPECT_EQ(accLaunchKernelEx(stream, runBorrowedClosure, &mark, nullptr, 0,
                              accLaunchIfIdle | accLaunchWaitsOutside),
            accErrorInvalidValue);
  ASSERT_EQ(accFree(dev), accSuccess);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Stream, ManyHostThreadsAtOnce) {
  constexpr int kThreads = 8;
  constexpr int kIterations = 150;
  const int devices = deviceCount();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  accStream_t shared = nullptr;
  ASSERT_EQ(accStreamCreate(&shared), accSuccess);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, devices, shared, &failures] {
      auto fail = [&failures] { failures.fetch_add(1); };
      if (accSetDevice(t % devices) != accSuccess) {
        return fail();
      }
      accStream_t own = nullptr;
      if (accStreamCreate(&own) != accSuccess) {
        return fail();
      }
      for (int i = 0; i < kIterations; ++i) {
        const size_t n =
            64 + static_cast<size_t>((t * 7919 + i * 104729) % 20000);
        void* dev = nullptr;
        if (accMalloc(&dev, n) != accSuccess) {
          fail();
          continue;
        }
        accStream_t stream = (i % 3 == 0)   ? nullptr
                             : (i % 3 == 1) ? own
                                            : shared;
        const unsigned char fill = static_cast<unsigned char>(t * 31 + i);
        accMemsetAsync(dev, fill, n, stream);
        launch(stream,
               [dev, n] {
                 auto* bytes = static_cast<unsigned char*>(dev);
                 for (size_t k = 0; k < n; ++k) {
                   bytes[k] = static_cast<unsigned char>(bytes[k] + 1);
                 }
                 return accSuccess;
               },
               {dev});
        accEvent_t event = nullptr;
        accEventCreate(&event);
        accEventRecord(event, stream);
        accEventSynchronize(event);
        accEventDestroy(event);
        std::vector<unsigned char> host(n);
        if (accMemcpyAsync(host.data(), dev, n, accMemcpyDeviceToHost,
                           stream) != accSuccess) {
          fail();
        }
        const unsigned char expected = static_cast<unsigned char>(fill + 1);
        if (std::any_of(host.begin(), host.end(), [expected](unsigned char c) {
              return c != expected;
            })) {
          fail();
        }
        if (accFree(dev) != accSuccess) {
          fail();
        }
      }
      if (accStreamDestroy(own) != accSuccess) {
        fail();
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(accStreamDestroy(shared), accSuccess);
  for (int d = 0; d < devices; ++d) {
    ASSERT_EQ(accSetDevice(d), accSuccess);
    EXPECT_EQ(accDeviceSynchronize(), accSuccess);
  }
  ASSERT_EQ(accSetDevice(0), accSuccess);
}

}  // namespace
}  // namespace accgen::emulator::test
