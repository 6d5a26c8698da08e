// Stream capture and graphs: what a capture records, how a graph replays it,
// the calls a capture refuses, joined streams, and the ownership of kernel
// data (accLaunchKernelOwned).
#include <atomic>
#include <cstring>
#include <vector>

#include "test_util.h"

namespace accgen::emulator::test {
namespace {

struct Counter {
  std::atomic<int>* runs;
  std::atomic<int>* releases;
  int* data;  // device memory
  int add;
};

accError_t runCounter(void* data) {
  auto* c = static_cast<Counter*>(data);
  c->runs->fetch_add(1);
  *c->data += c->add;
  return accSuccess;
}

void releaseCounter(void* data) {
  auto* c = static_cast<Counter*>(data);
  c->releases->fetch_add(1);
  delete c;
}

accError_t launchAdd(accStream_t stream, int* dev, int add,
                     std::atomic<int>& runs, std::atomic<int>& releases) {
  const void* buffers[] = {dev};
  return accLaunchKernelOwned(stream, runCounter,
                              new Counter{&runs, &releases, dev, add},
                              releaseCounter, buffers, 1);
}

int readInt(const int* dev) {
  int value = -1;
  EXPECT_EQ(accMemcpy(&value, dev, sizeof(value), accMemcpyDeviceToHost),
            accSuccess);
  return value;
}

class Graph : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(accSetDevice(0), accSuccess);
    ASSERT_EQ(accStreamCreate(&stream_), accSuccess);
    ASSERT_EQ(accMalloc(reinterpret_cast<void**>(&dev_), 64), accSuccess);
    ASSERT_EQ(accMemset(dev_, 0, 64), accSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(accFree(dev_), accSuccess);
    EXPECT_EQ(accStreamDestroy(stream_), accSuccess);
  }
  accStream_t stream_ = nullptr;
  int* dev_ = nullptr;
};

TEST_F(Graph, OwnedKernelOutsideCaptureRunsOnceAndIsReleased) {
  std::atomic<int> runs{0};
  std::atomic<int> releases{0};
  ASSERT_EQ(launchAdd(stream_, dev_, 5, runs, releases), accSuccess);
  ASSERT_EQ(accStreamSynchronize(stream_), accSuccess);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(releases.load(), 1);
  EXPECT_EQ(readInt(dev_), 5);
  // The driver owns the data even when the launch fails.
  const void* unknown[] = {reinterpret_cast<void*>(0x10)};
  EXPECT_EQ(accLaunchKernelOwned(stream_, runCounter,
                                 new Counter{&runs, &releases, dev_, 1},
                                 releaseCounter, unknown, 1),
            accErrorInvalidValue);
  EXPECT_EQ(releases.load(), 2);
}

TEST_F(Graph, CaptureRecordsInsteadOfRunningAndReplaysInOrder) {
  std::atomic<int> runs{0};
  std::atomic<int> releases{0};
  int* pinned = nullptr;
  ASSERT_EQ(accMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int)),
            accSuccess);
  ASSERT_EQ(accStreamBeginCapture(stream_, accStreamCaptureModeGlobal),
            accSuccess);
  accStreamCaptureStatus status = accStreamCaptureStatusNone;
  unsigned long long id = 0;
  ASSERT_EQ(accStreamGetCaptureInfo(stream_, &status, &id), accSuccess);
  EXPECT_EQ(status, accStreamCaptureStatusActive);
  EXPECT_NE(id, 0U);
  // memset to 0, +3, *copy to dev_[1]*, +4: replay leaves 7 and 3.
  ASSERT_EQ(accMemsetAsync(dev_, 0, sizeof(int), stream_), accSuccess);
  ASSERT_EQ(launchAdd(stream_, dev_, 3, runs, releases), accSuccess);
  ASSERT_EQ(accMemcpyAsync(dev_ + 1, dev_, sizeof(int), accMemcpyDeviceToDevice,
                           stream_),
            accSuccess);
  ASSERT_EQ(launchAdd(stream_, dev_, 4, runs, releases), accSuccess);
  ASSERT_EQ(
      accMemcpyAsync(pinned, dev_, sizeof(int), accMemcpyDeviceToHost, stream_),
      accSuccess);
  accGraph_t graph = nullptr;
  ASSERT_EQ(accStreamEndCapture(stream_, &graph), accSuccess);
  ASSERT_NE(graph, nullptr);
  size_t nodes = 0;
  ASSERT_EQ(accGraphGetNodeCount(graph, &nodes), accSuccess);
  EXPECT_EQ(nodes, 5U);
  EXPECT_EQ(runs.load(), 0) << "a capture runs nothing";
  ASSERT_EQ(accStreamGetCaptureInfo(stream_, &status, &id), accSuccess);
  EXPECT_EQ(status, accStreamCaptureStatusNone);

  accGraphExec_t exec = nullptr;
  ASSERT_EQ(accGraphInstantiate(&exec, graph), accSuccess);
  ASSERT_EQ(accGraphDestroy(graph), accSuccess);  // exec keeps the work
  for (int replay = 1; replay <= 3; ++replay) {
    ASSERT_EQ(accMemset(dev_ + 1, 0xff, sizeof(int)), accSuccess);
    *pinned = 0;
    ASSERT_EQ(accGraphLaunch(exec, stream_), accSuccess);
    ASSERT_EQ(accStreamSynchronize(stream_), accSuccess);
    EXPECT_EQ(readInt(dev_), 7);
    EXPECT_EQ(readInt(dev_ + 1), 3);
    EXPECT_EQ(*pinned, 7);
    EXPECT_EQ(runs.load(), 2 * replay);
  }
  EXPECT_EQ(releases.load(), 0) << "the graph keeps its kernels' data";
  ASSERT_EQ(accGraphExecDestroy(exec), accSuccess);
  EXPECT_EQ(releases.load(), 2);
  EXPECT_EQ(accGraphExecDestroy(exec), accErrorInvalidHandle);
  ASSERT_EQ(accFreeHost(pinned), accSuccess);
}

TEST_F(Graph, LaunchIsAsynchronousAndOrderedWithTheStream) {
  std::atomic<int> runs{0};
  std::atomic<int> releases{0};
  ASSERT_EQ(accStreamBeginCapture(stream_, accStreamCaptureModeGlobal),
            accSuccess);
  ASSERT_EQ(launchAdd(stream_, dev_, 1, runs, releases), accSuccess);
  accGraph_t graph = nullptr;
  ASSERT_EQ(accStreamEndCapture(stream_, &graph), accSuccess);
  accGraphExec_t exec = nullptr;
  ASSERT_EQ(accGraphInstantiate(&exec, graph), accSuccess);
  Gate gate;
  ASSERT_EQ(
      launch(stream_,
             [&] { return gate.wait() ? accSuccess : accErrorLaunchFailure; }),
      accSuccess);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(accGraphLaunch(exec, stream_), accSuccess);
  }
  EXPECT_EQ(runs.load(), 0) << "queued behind the held stream";
  EXPECT_EQ(accStreamQuery(stream_), accErrorNotReady);
  gate.open();
  ASSERT_EQ(accStreamSynchronize(stream_), accSuccess);
  EXPECT_EQ(runs.load(), 10);
  EXPECT_EQ(readInt(dev_), 10);
  ASSERT_EQ(accGraphExecDestroy(exec), accSuccess);
  ASSERT_EQ(accGraphDestroy(graph), accSuccess);
  EXPECT_EQ(releases.load(), 1);
}

TEST_F(Graph, CaptureRefusesWhatItCannotReplay) {
  // The default stream cannot capture.
  EXPECT_EQ(accStreamBeginCapture(nullptr, accStreamCaptureModeGlobal),
            accErrorStreamCaptureUnsupported);
  std::atomic<int> runs{0};
  std::atomic<int> releases{0};
  int host = 0;
  const auto expectInvalidatedBy = [&](const std::function<accError_t()>& call,
                                       const char* what) {
    SCOPED_TRACE(what);
    ASSERT_EQ(accStreamBeginCapture(stream_, accStreamCaptureModeGlobal),
              accSuccess);
    EXPECT_EQ(accStreamBeginCapture(stream_, accStreamCaptureModeGlobal),
              accErrorStreamCaptureUnsupported)
        << "already capturing";
    EXPECT_EQ(call(), accErrorStreamCaptureUnsupported);
    accStreamCaptureStatus status = accStreamCaptureStatusNone;
    ASSERT_EQ(accStreamGetCaptureInfo(stream_, &status, nullptr), accSuccess);
    EXPECT_EQ(status, accStreamCaptureStatusInvalidated);
    EXPECT_EQ(launchAdd(stream_, dev_, 1, runs, releases),
              accErrorStreamCaptureInvalidated);
    accGraph_t graph = reinterpret_cast<accGraph_t>(0x1);
    EXPECT_EQ(accStreamEndCapture(stream_, &graph),
              accErrorStreamCaptureInvalidated);
    EXPECT_EQ(graph, nullptr);
  };
  expectInvalidatedBy([&] { return accStreamSynchronize(stream_); },
                      "stream synchronize");
  expectInvalidatedBy([&] { return accStreamQuery(stream_); }, "stream query");
  expectInvalidatedBy([&] { return accDeviceSynchronize(); },
                      "device synchronize");
  expectInvalidatedBy(
      [&] {
        return accMemcpy(&host, dev_, sizeof(int), accMemcpyDeviceToHost);
      },
      "synchronous copy");
  expectInvalidatedBy(
      [&] {
        return accMemcpyAsync(&host, dev_, sizeof(int), accMemcpyDeviceToHost,
                              stream_);
      },
      "pageable host memory");
  expectInvalidatedBy(
      [&] { return launchSync(stream_, [] { return accSuccess; }, {}); },
      "synchronous launch");
  expectInvalidatedBy(
      [&] { return launch(stream_, [] { return accSuccess; }, {}); },
      "a kernel whose data the driver does not own");
  expectInvalidatedBy(
      [&] {
        accEvent_t event = nullptr;
        EXPECT_EQ(accEventCreate(&event), accSuccess);
        EXPECT_EQ(accEventRecord(event, stream_), accSuccess);
        const accError_t error = accEventSynchronize(event);
        EXPECT_EQ(accEventDestroy(event), accSuccess);
        return error;
      },
      "waiting for a captured event");
  EXPECT_EQ(runs.load(), 0);
  // An idle-only launch declines without harming the capture.
  ASSERT_EQ(accStreamBeginCapture(stream_, accStreamCaptureModeGlobal),
            accSuccess);
  bool ran = false;
  Closure mark = [&] {
    ran = true;
    return accSuccess;
  };
  EXPECT_EQ(accLaunchKernelEx(stream_, runBorrowedClosure, &mark, nullptr, 0,
                              accLaunchIfIdle),
            accErrorNotReady);
  EXPECT_FALSE(ran);
  accGraph_t graph = nullptr;
  ASSERT_EQ(accStreamEndCapture(stream_, &graph), accSuccess);
  ASSERT_EQ(accGraphDestroy(graph), accSuccess);
  // Relaxed mode lets other work synchronize.
  ASSERT_EQ(accStreamBeginCapture(stream_, accStreamCaptureModeRelaxed),
            accSuccess);
  EXPECT_EQ(accMemcpy(&host, dev_, sizeof(int), accMemcpyDeviceToHost),
            accSuccess);
  ASSERT_EQ(accStreamEndCapture(stream_, &graph), accSuccess);
  ASSERT_EQ(accGraphDestroy(graph), accSuccess);
}

TEST_F(Graph, JoinedStreamsAddToTheGraphAndMustJoinBack) {
  accStream_t side = nullptr;
  ASSERT_EQ(accStreamCreate(&side), accSuccess);
  accEvent_t fork = nullptr;
  accEvent_t join = nullptr;
  ASSERT_EQ(accEventCreate(&fork), accSuccess);
  ASSERT_EQ(accEventCreate(&join), accSuccess);
  std::atomic<int> runs{0};
  std::atomic<int> releases{0};
  for (const bool join_back : {true, false}) {
    SCOPED_TRACE(join_back ? "joined back" : "not joined back");
    ASSERT_EQ(accStreamBeginCapture(stream_, accStreamCaptureModeGlobal),
              accSuccess);
    ASSERT_EQ(launchAdd(stream_, dev_, 1, runs, releases), accSuccess);
    ASSERT_EQ(accEventRecord(fork, stream_), accSuccess);
    ASSERT_EQ(accStreamWaitEvent(side, fork, 0), accSuccess);
    accStreamCaptureStatus status = accStreamCaptureStatusNone;
    ASSERT_EQ(accStreamGetCaptureInfo(side, &status, nullptr), accSuccess);
    EXPECT_EQ(status, accStreamCaptureStatusActive) << "the side joined";
    ASSERT_EQ(launchAdd(side, dev_ + 1, 10, runs, releases), accSuccess);
    if (join_back) {
      ASSERT_EQ(accEventRecord(join, side), accSuccess);
      ASSERT_EQ(accStreamWaitEvent(stream_, join, 0), accSuccess);
    }
    accGraph_t graph = nullptr;
    const accError_t ended = accStreamEndCapture(stream_, &graph);
    ASSERT_EQ(accStreamGetCaptureInfo(side, &status, nullptr), accSuccess);
    EXPECT_EQ(status, accStreamCaptureStatusNone) << "the side left";
    if (!join_back) {
      EXPECT_EQ(ended, accErrorStreamCaptureUnjoined);
      EXPECT_EQ(graph, nullptr);
      continue;
    }
    ASSERT_EQ(ended, accSuccess);
    EXPECT_EQ(runs.load(), 0);
    accGraphExec_t exec = nullptr;
    ASSERT_EQ(accGraphInstantiate(&exec, graph), accSuccess);
    ASSERT_EQ(accGraphLaunch(exec, stream_), accSuccess);
    // The captured events are recorded again by the launch.
    ASSERT_EQ(accEventSynchronize(join), accSuccess);
    EXPECT_EQ(readInt(dev_), 1);
    EXPECT_EQ(readInt(dev_ + 1), 10);
    ASSERT_EQ(accGraphExecDestroy(exec), accSuccess);
    ASSERT_EQ(accGraphDestroy(graph), accSuccess);
  }
  // Every kernel data was released: 2 of the replayed graph, 2 of the
  // refused one.
  EXPECT_EQ(releases.load(), 4);
  ASSERT_EQ(accEventDestroy(fork), accSuccess);
  ASSERT_EQ(accEventDestroy(join), accSuccess);
  ASSERT_EQ(accStreamDestroy(side), accSuccess);
}

TEST_F(Graph, AKernelErrorInAReplayIsStickyOnTheStream) {
  ASSERT_EQ(accStreamBeginCapture(stream_, accStreamCaptureModeGlobal),
            accSuccess);
  const void* buffers[] = {dev_};
  ASSERT_EQ(accLaunchKernelOwned(
                stream_, [](void*) { return accErrorLaunchFailure; }, nullptr,
                nullptr, buffers, 1),
            accSuccess);
  accGraph_t graph = nullptr;
  ASSERT_EQ(accStreamEndCapture(stream_, &graph), accSuccess);
  accGraphExec_t exec = nullptr;
  ASSERT_EQ(accGraphInstantiate(&exec, graph), accSuccess);
  ASSERT_EQ(accGraphLaunch(exec, stream_), accSuccess);
  EXPECT_EQ(accStreamSynchronize(stream_), accErrorLaunchFailure);
  EXPECT_EQ(accStreamSynchronize(stream_), accSuccess);
  ASSERT_EQ(accGraphExecDestroy(exec), accSuccess);
  ASSERT_EQ(accGraphDestroy(graph), accSuccess);
  EXPECT_EQ(accGraphDestroy(graph), accErrorInvalidHandle);
  EXPECT_EQ(accGraphLaunch(exec, stream_), accErrorInvalidHandle);
}

}  // namespace
}  // namespace accgen::emulator::test
