// A stream: an ordered queue of work executed by a worker thread of its own,
// started on first use. Submission appends under a mutex and wakes the
// worker only if it sleeps; the worker and synchronizing threads spin for a
// bounded time (Config::spin_ns) before they block, which keeps launch and
// launch-then-synchronize in the low microseconds without busy cores.
//
// Items are numbered from 1 in submission order; `completed` is the number of
// the last finished item, so "item n done" is completed >= n.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "accgen/driver.h"
#include "work.h"

namespace accgen::emulator {

class Capture;

class Stream {
 public:
  Stream(int device, int priority, bool is_default, int64_t spin_ns);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  int priority() const { return priority_; }
  bool isDefault() const { return is_default_; }
  accStream_t handle() { return reinterpret_cast<accStream_t>(this); }

  /// Appends `work`; stores its item number in `seq`. After shutdown or
  /// destruction started, runs the work at once on the calling thread.
  /// `wake`: wake the worker if it sleeps.
  accError_t submit(Work&& work, uint64_t& seq, bool wake = true);
  /// Appends `work` without waking the worker and runs it on the calling
  /// thread, with what was queued before it, as a waiting thread would
  /// (Note [Waiting threads run queued work]); the worker runs it instead if
  /// it is at work. Its error is sticky, as on the worker.
  accError_t submitAndRun(Work&& work);
  /// Runs `work` in stream order and returns once it finished: inline when
  /// the stream is idle (or this is its own worker) or once the work queued
  /// before it finished, else (more work arrived meanwhile) queued and
  /// waited for. Its error is returned, not made sticky.
  accError_t runOrdered(Work&& work);
  /// Runs `work` on the calling thread, with its error stored in `error`,
  /// when the stream is idle (or this is its own worker); false, with
  /// nothing run, otherwise.
  bool runIfIdle(Work& work, accError_t& error);
  /// Whether work may run on the calling thread now, as runIfIdle runs it:
  /// the stream is idle, or this is its own worker.
  bool mayRunHere() const;

  /// The number of the last submitted item.
  uint64_t submitted() const {
    return submitted_.load(std::memory_order_acquire);
  }
  bool isComplete(uint64_t seq) const {
    return completed_.load(std::memory_order_acquire) >= seq;
  }
  bool idle() const { return isComplete(submitted()); }
  /// Blocks until item `seq` finished, running queued items up to it on the
  /// calling thread while the worker runs none (Note [Waiting threads run
  /// queued work]). From the stream's own worker, or inside one of its
  /// items, it only waits for the items before the running one (they are
  /// done), so a kernel that synchronizes its own stream cannot deadlock.
  void waitFor(uint64_t seq);
  /// Waits for everything submitted so far.
  void drain() { waitFor(submitted()); }

  /// Makes `error` the sticky error unless one is already pending.
  void setError(accError_t error);
  /// Reports the sticky error once: returns it and clears it.
  accError_t takeError();
  /// Whether a sticky error is pending (it stays pending).
  bool hasError() const {
    return error_.load(std::memory_order_acquire) != accSuccess;
  }

  /// The capture this stream records into (capture.h), or null.
  std::shared_ptr<Capture> capture() const {
    if (!capturing_.load(std::memory_order_acquire)) {
      return nullptr;
    }
    const std::lock_guard<std::mutex> lock(capture_mutex_);
    return capture_;
  }
  void setCapture(std::shared_ptr<Capture> capture) {
    const std::lock_guard<std::mutex> lock(capture_mutex_);
    capturing_.store(capture != nullptr, std::memory_order_release);
    capture_ = std::move(capture);
  }

  /// Stops the worker after its current item; queued items are dropped and
  /// count as completed. Used at process exit and for a destroyed stream
  /// (which was drained first).
  void stop();
  /// Wakes every thread blocked in waitFor on this stream (process exit).
  void wakeWaiters();

 private:
  void startWorker();
  void workerLoop();
  bool popNext(Work& work, uint64_t& seq);
  /// Runs queued items up to `seq` on the calling thread while the worker
  /// runs none; returns when that stops being possible.
  void runQueuedUpTo(uint64_t seq);
  /// Takes the queue's first item into `work` (queue_mutex_ held); returns
  /// its item number.
  uint64_t takeFront(Work& work);
  /// Runs a taken item: its error becomes sticky, and its references are
  /// dropped before the caller announces its completion.
  void runItem(Work& work);
  void complete(uint64_t seq);

  const int device_;
  const int priority_;
  const bool is_default_;
  const int64_t spin_ns_;

  // Submission side.
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<Work> queue_;  // guarded by queue_mutex_
  bool stopping_ = false;   // guarded by queue_mutex_
  std::atomic<uint64_t> submitted_{0};
  std::atomic<bool> worker_sleeping_{false};
  std::atomic<bool> started_{false};
  std::thread worker_;  // guarded by queue_mutex_
  // The number of items taken off the queue, by the worker or by a waiting
  // thread; changed under queue_mutex_, read by the spinning worker.
  std::atomic<uint64_t> taken_{0};
  // The worker runs an item: set under queue_mutex_ when it takes one,
  // cleared once it completed.
  std::atomic<bool> worker_busy_{false};
  // A waiting thread runs an item (Note [Waiting threads run queued work]).
  bool stolen_ = false;  // guarded by queue_mutex_

  // Completion side.
  std::atomic<uint64_t> completed_{0};
  std::atomic<int> done_waiters_{0};
  std::mutex done_mutex_;
  std::condition_variable done_cv_;

  std::atomic<int> error_{accSuccess};

  mutable std::mutex capture_mutex_;
  std::shared_ptr<Capture> capture_;  // guarded by capture_mutex_
  std::atomic<bool> capturing_{false};
};

/// True once the process began exiting (waits give up, streams run inline).
bool shuttingDown();
void setShuttingDown();

}  // namespace accgen::emulator
