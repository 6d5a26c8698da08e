// Events: record, query, synchronize, re-arming, timing (plausible and
// monotonic), disabled timing and the errors of elapsed time.
#include <vector>

#include "test_util.h"

namespace accgen::emulator::test {
namespace {

accError_t sleepKernel(accStream_t stream, int ms) {
  return launch(stream, [ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return accSuccess;
  });
}

TEST(Event, CreateDestroyAndBadArguments) {
  accEvent_t event = nullptr;
  ASSERT_EQ(accEventCreate(&event), accSuccess);
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(accEventQuery(event), accSuccess) << "never recorded";
  EXPECT_EQ(accEventSynchronize(event), accSuccess) << "never recorded";
  ASSERT_EQ(accEventDestroy(event), accSuccess);
  EXPECT_EQ(accEventDestroy(event), accErrorInvalidHandle);
  EXPECT_EQ(accEventQuery(event), accErrorInvalidHandle);
  EXPECT_EQ(accEventSynchronize(event), accErrorInvalidHandle);
  EXPECT_EQ(accEventRecord(event, nullptr), accErrorInvalidHandle);
  EXPECT_EQ(accEventDestroy(nullptr), accErrorInvalidHandle);
  EXPECT_EQ(accEventCreate(nullptr), accErrorInvalidValue);
  EXPECT_EQ(accEventCreateWithFlags(&event, 0x1), accErrorInvalidValue);
  EXPECT_EQ(accEventCreateWithFlags(&event, 0x10), accErrorInvalidValue);

  ASSERT_EQ(accEventCreate(&event), accSuccess);
  int dummy = 0;
  EXPECT_EQ(accEventRecord(event, reinterpret_cast<accStream_t>(&dummy)),
            accErrorInvalidHandle);
  float ms = 0;
  EXPECT_EQ(accEventElapsedTime(nullptr, event, event), accErrorInvalidValue);
  EXPECT_EQ(
      accEventElapsedTime(&ms, event, reinterpret_cast<accEvent_t>(&dummy)),
      accErrorInvalidHandle);
  ASSERT_EQ(accEventDestroy(event), accSuccess);
}

TEST(Event, QueryAndSynchronizeFollowTheStream) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  accEvent_t event = nullptr;
  ASSERT_EQ(accEventCreate(&event), accSuccess);
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(holdStream(stream, gate), accSuccess);
  ASSERT_EQ(accEventRecord(event, stream), accSuccess);
  EXPECT_EQ(accEventQuery(event), accErrorNotReady);
  gate->open();
  ASSERT_EQ(accEventSynchronize(event), accSuccess);
  EXPECT_EQ(accEventQuery(event), accSuccess);

  // Recording again re-arms the event at the new point.
  auto second = std::make_shared<Gate>();
  ASSERT_EQ(holdStream(stream, second), accSuccess);
  ASSERT_EQ(accEventRecord(event, stream), accSuccess);
  EXPECT_EQ(accEventQuery(event), accErrorNotReady);
  second->open();
  ASSERT_EQ(accEventSynchronize(event), accSuccess);
  EXPECT_EQ(accEventQuery(event), accSuccess);
  ASSERT_EQ(accStreamSynchronize(stream), accSuccess);
  ASSERT_EQ(accEventDestroy(event), accSuccess);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Event, ElapsedTimeMeasuresTheKernelBetween) {
  accStream_t stream = nullptr;
  ASSERT_EQ(accStreamCreate(&stream), accSuccess);
  accEvent_t start = nullptr;
  accEvent_t end = nullptr;
  ASSERT_EQ(accEventCreate(&start), accSuccess);
  ASSERT_EQ(accEventCreate(&end), accSuccess);
  ASSERT_EQ(accEventRecord(start, stream), accSuccess);
  ASSERT_EQ(sleepKernel(stream, 20), accSuccess);
  ASSERT_EQ(accEventRecord(end, stream), accSuccess);
  ASSERT_EQ(accEventSynchronize(end), accSuccess);
  float ms = -1;
  ASSERT_EQ(accEventElapsedTime(&ms, start, end), accSuccess);
  EXPECT_GE(ms, 20.0f);
  EXPECT_LT(ms, 1000.0f);
  float backwards = 0;
  ASSERT_EQ(accEventElapsedTime(&backwards, end, start), accSuccess);
  EXPECT_FLOAT_EQ(backwards, -ms);
  ASSERT_EQ(accEventDestroy(start), accSuccess);
  ASSERT_EQ(accEventDestroy(end), accSuccess);
  ASSERT_EQ(accStreamDestroy(stream), accSuccess);
}

TEST(Event, TimestampsAreMonotonic) {
  std::vector<accEvent_t> events(6);
  for (auto& event : events) {
    ASSERT_EQ(accEventCreate(&event), accSuccess);
  }
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(accEventRecord(events[i], nullptr), accSuccess);
    ASSERT_EQ(sleepKernel(nullptr, static_cast<int>(i)), accSuccess);
  }
  ASSERT_EQ(accEventSynchronize(events.back()), accSuccess);
  float previous = 0;
  for (size_t i = 1; i < events.size(); ++i) {
    float ms = -1;
    ASSERT_EQ(accEventElapsedTime(&ms, events[0], events[i]), accSuccess);
    EXPECT_GE(ms, previous);
    float step = -1;
    ASSERT_EQ(accEventElapsedTime(&step, events[i - 1], events[i]), accSuccess);
    EXPECT_GE(step, static_cast<float>(i - 1))
        << "the kernel slept " << i - 1 << " ms";
    previous = ms;
  }
  for (auto event : events) {
    ASSERT_EQ(accEventDestroy(event), accSuccess);
  }
}

TEST(Event, ElapsedTimeErrors) {
  accEvent_t timed = nullptr;
  accEvent_t untimed = nullptr;
  accEvent_t unrecorded = nullptr;
  ASSERT_EQ(accEventCreate(&timed), accSuccess);
  ASSERT_EQ(accEventCreateWithFlags(&untimed, accEventDisableTiming),
            accSuccess);
  ASSERT_EQ(accEventCreate(&unrecorded), accSuccess);
  ASSERT_EQ(accEventRecord(timed, nullptr), accSuccess);
  ASSERT_EQ(accEventRecord(untimed, nullptr), accSuccess);
  ASSERT_EQ(accStreamSynchronize(nullptr), accSuccess);
  EXPECT_EQ(accEventQuery(untimed), accSuccess);
  float ms = 0;
  EXPECT_EQ(accEventElapsedTime(&ms, timed, untimed), accErrorInvalidHandle)
      << "timing disabled";
  EXPECT_EQ(accEventElapsedTime(&ms, untimed, timed), accErrorInvalidHandle);
  EXPECT_EQ(accEventElapsedTime(&ms, timed, unrecorded), accErrorInvalidHandle)
      << "never recorded";
  ASSERT_EQ(accEventElapsedTime(&ms, timed, timed), accSuccess);
  EXPECT_EQ(ms, 0.0f);

  // Not completed yet.
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(holdStream(nullptr, gate), accSuccess);
  ASSERT_EQ(accEventRecord(unrecorded, nullptr), accSuccess);
  EXPECT_EQ(accEventElapsedTime(&ms, timed, unrecorded), accErrorNotReady);
  gate->open();
  ASSERT_EQ(accEventSynchronize(unrecorded), accSuccess);
  EXPECT_EQ(accEventElapsedTime(&ms, timed, unrecorded), accSuccess);
  EXPECT_GE(ms, 0.0f);

  for (auto event : {timed, untimed, unrecorded}) {
    ASSERT_EQ(accEventDestroy(event), accSuccess);
  }
}

TEST(Event, DestroyWhileRecordedWorkIsPending) {
  accEvent_t event = nullptr;
  ASSERT_EQ(accEventCreate(&event), accSuccess);
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(holdStream(nullptr, gate), accSuccess);
  ASSERT_EQ(accEventRecord(event, nullptr), accSuccess);
  ASSERT_EQ(accEventDestroy(event), accSuccess);
  gate->open();
  ASSERT_EQ(accStreamSynchronize(nullptr), accSuccess);
}

}  // namespace
}  // namespace accgen::emulator::test
