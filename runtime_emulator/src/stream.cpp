// Stream workers and the wait protocol.
//
// Wake-ups use the "announce, then re-check" pattern on both sides, with
// sequentially consistent atomics, so that no notification is lost and none
// is sent when nobody sleeps:
//  - a worker that finds nothing to take under queue_mutex_ sets
//    worker_sleeping_ before it waits (which releases the mutex); a
//    submitter pushes under queue_mutex_, then reads worker_sleeping_ and
//    notifies only if it is set; so does a waiting thread that ran an item
//    itself (Note [Waiting threads run queued work]) and leaves more queued;
//  - a waiter about to block increments done_waiters_, then checks completed_
//    under done_mutex_; the worker stores completed_, then reads
//    done_waiters_ and, if non-zero, notifies under done_mutex_.
#include "stream.h"

#include "runtime.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <system_error>

namespace accgen::emulator {
namespace {

std::atomic<bool> g_shutting_down{false};

// The stream whose worker is the calling thread, and the item it runs.
thread_local Stream* tls_stream = nullptr;
thread_local uint64_t tls_seq = 0;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Note [Spinning on a busy machine]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A thread waiting for the other side of a stream polls before it blocks, for
// at most Config::spin_ns. When both sides run on cores of their own, a
// pause-instruction spin sees the other side within a fraction of a
// microsecond. But on an oversubscribed machine (2 cores shared with
// compilers and OpenMP kernels) the two often share one core, and then every
// microsecond one of them spins is a microsecond the other cannot run: a pure
// 3 us spin on both sides makes launch + synchronize take about 10 us instead
// of 0.3 us. So a synchronizing host thread spins with pause for only
// kWaiterPauseNs, then polls with sched_yield, which hands the core to the
// worker if it shares it and returns at once if not; the worker, which has
// just completed an item and so has likely just woken the thread that waits
// for it, yields from the start.
constexpr int64_t kWaiterPauseNs = 1'000;
constexpr int64_t kWorkerPauseNs = 0;

// Polls `ready()`: with pause for `pause_ns`, then with sched_yield until
// `spin_ns` elapsed; true if ready.
template <typename Ready>
bool spinUntil(Ready&& ready, int64_t spin_ns, int64_t pause_ns) {
  if (ready()) {
    return true;
  }
  if (spin_ns <= 0) {
    return false;
  }
  const int64_t start = nowNs();
  const int64_t pause_until = start + std::min(spin_ns, pause_ns);
  const int64_t deadline = start + spin_ns;
  if (pause_ns > 0) {
    for (unsigned i = 1;; ++i) {
      cpuRelax();
      if (ready()) {
        return true;
      }
      if ((i & 15u) == 0 && nowNs() >= pause_until) {
        break;
      }
    }
  }
  for (;;) {
    sched_yield();
    if (ready()) {
      return true;
    }
    if (nowNs() >= deadline) {
      return false;
    }
  }
}

}  // namespace

bool shuttingDown() {
  return g_shutting_down.load(std::memory_order_acquire);
}
void setShuttingDown() {
  g_shutting_down.store(true, std::memory_order_seq_cst);
}

Stream::Stream(int device, int priority, bool is_default, int64_t spin_ns)
    : device_(device),
      priority_(priority),
      is_default_(is_default),
      spin_ns_(spin_ns) {}

Stream::~Stream() {
  // Streams are destroyed only after stop(); a worker still attached here
  // would be a bug, but detaching beats std::terminate.
  if (worker_.joinable()) {
    worker_.detach();
  }
}

void Stream::startWorker() {
  // Called with queue_mutex_ held.
  if (started_.load(std::memory_order_relaxed)) {
    return;
  }
  noteWorkerStarted();
  worker_ = std::thread([this] { workerLoop(); });
  started_.store(true, std::memory_order_release);
}

accError_t Stream::submit(Work&& work, uint64_t& seq, bool wake) {
  {
    std::unique_lock<std::mutex> lock(queue_mutex_);
    if (stopping_) {
      lock.unlock();
      // The worker is gone (exit, or destruction of the stream): keep the
      // call's effect by running the work here, in order with itself.
      runItem(work);
      seq = submitted_.fetch_add(1, std::memory_order_seq_cst) + 1;
      complete(seq);
      return accSuccess;
    }
    if (!started_.load(std::memory_order_relaxed)) {
      try {
        startWorker();
      } catch (const std::system_error&) {
        return accErrorMemoryAllocation;
      }
    }
    queue_.push_back(std::move(work));
    seq = submitted_.fetch_add(1, std::memory_order_seq_cst) + 1;
  }
  if (wake && worker_sleeping_.load(std::memory_order_seq_cst)) {
    queue_cv_.notify_one();
  }
  return accSuccess;
}

accError_t Stream::submitAndRun(Work&& work) {
  uint64_t seq = 0;
  const accError_t submitted = submit(std::move(work), seq, /*wake=*/false);
  if (submitted != accSuccess) {
    return submitted;
  }
  runQueuedUpTo(seq);
  // Another thread ran queued work meanwhile: it wakes the worker when it
  // leaves more queued, but it may have looked before this push.
  if (!isComplete(seq) && worker_sleeping_.load(std::memory_order_seq_cst)) {
    queue_cv_.notify_one();
  }
  return accSuccess;
}

bool Stream::mayRunHere() const {
  return tls_stream == this || idle();
}

bool Stream::runIfIdle(Work& work, accError_t& error) {
  if (!mayRunHere()) {
    return false;
  }
  error = runWork(work);
  return true;
}

accError_t Stream::runOrdered(Work&& work) {
  if (accError_t error = accSuccess; runIfIdle(work, error)) {
    return error;
  }
  // The caller waits either way: waiting for the queued work first and then
  // running the kernel here keeps it on the calling thread, whose thread
  // pools (OpenMP) the kernel's CPU code shares with everything else the
  // caller runs. On the worker it would start pools of its own, which on a
  // small machine compete with the caller's spinning ones (a small
  // convolution took twice as long).
  waitFor(submitted());
  if (idle()) {
    return runWork(work);
  }
  // The item's error must come back to the caller, not become sticky: the
  // kernel-less work kinds report through a slot the caller waits on.
  struct Result {
    accError_t error = accSuccess;
  };
  auto result = std::make_shared<Result>();
  Work wrapper;
  wrapper.kind = WorkKind::kKernel;
  wrapper.fn = [](void* data) -> accError_t {
    auto* pair = static_cast<std::pair<Work, std::shared_ptr<Result>>*>(data);
    pair->second->error = runWork(pair->first);
    return accSuccess;
  };
  auto payload = std::make_unique<std::pair<Work, std::shared_ptr<Result>>>(
      std::move(work), result);
  wrapper.user_data = payload.get();
  uint64_t seq = 0;
  const accError_t submitted = submit(std::move(wrapper), seq);
  if (submitted != accSuccess) {
    return submitted;
  }
  waitFor(seq);
  // After the wait the worker no longer touches the payload; if the wait
  // was cut short by process exit, leak it rather than race the worker.
  if (!isComplete(seq)) {
    payload.release();
    return accSuccess;
  }
  return result->error;
}

bool Stream::popNext(Work& work, uint64_t& seq) {
  const auto available = [this] {
    return submitted_.load(std::memory_order_acquire) >
           taken_.load(std::memory_order_acquire);
  };
  (void)spinUntil(available, spin_ns_, kWorkerPauseNs);
  std::unique_lock<std::mutex> lock(queue_mutex_);
  // A waiting thread may have taken what the spin saw, or still run it.
  const auto ready = [this] {
    return stopping_ || (!queue_.empty() && !stolen_);
  };
  if (!ready()) {
    worker_sleeping_.store(true, std::memory_order_seq_cst);
    queue_cv_.wait(lock, ready);
    worker_sleeping_.store(false, std::memory_order_relaxed);
  }
  if (stopping_) {
    return false;
  }
  seq = takeFront(work);
  worker_busy_.store(true, std::memory_order_relaxed);
  return true;
}

uint64_t Stream::takeFront(Work& work) {
  work = std::move(queue_.front());
  queue_.pop_front();
  return taken_.fetch_add(1, std::memory_order_acq_rel) + 1;
}

void Stream::runItem(Work& work) {
  const accError_t error = runWork(work);
  if (error != accSuccess) {
    setError(error);
  }
  // Drop the work's references before announcing completion, so a thread
  // that synchronized and then frees memory finds no stray owner.
  work = Work();
}

// Note [Waiting threads run queued work]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A thread that waits for a stream's item while the stream's worker runs
// nothing (it sleeps, or has not yet taken the item it was woken for) takes
// the queued items up to that one off the queue and runs them itself, in
// order, one at a time, as the worker would have. It would only have
// waited: this way it does not wait for the worker to be scheduled (tens of
// microseconds on a busy two-core machine, where OpenMP threads spin on the
// other core) and then to be woken itself. An asynchronous launch followed
// by a synchronous one, the common case of a device kernel the backend
// launches asynchronously (the example's fill_) before the next emulated
// operator, then costs no hand-off at all. Each stolen item runs with the
// stream as the thread's stream (tls_stream), so a kernel that synchronizes
// its own stream still cannot deadlock; its error is sticky, as on the
// worker. The worker, woken meanwhile, waits until the stolen item is done.
void Stream::runQueuedUpTo(uint64_t seq) {
  while (!isComplete(seq)) {
    Work work;
    uint64_t item = 0;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      if (stopping_ || stolen_ || queue_.empty() ||
          worker_busy_.load(std::memory_order_acquire) ||
          taken_.load(std::memory_order_relaxed) >= seq) {
        return;
      }
      item = takeFront(work);
      stolen_ = true;
    }
    Stream* const saved_stream = tls_stream;
    const uint64_t saved_seq = tls_seq;
    tls_stream = this;
    tls_seq = item;
    runItem(work);
    tls_stream = saved_stream;
    tls_seq = saved_seq;
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      stolen_ = false;
      wake =
          !queue_.empty() && worker_sleeping_.load(std::memory_order_seq_cst);
    }
    if (wake) {
      queue_cv_.notify_one();
    }
    // Last: a thread that waited for the item may destroy the stream.
    complete(item);
  }
}

void Stream::complete(uint64_t seq) {
  // Monotonic maximum: after stop(), inline submissions from several
  // threads may finish out of order.
  uint64_t current = completed_.load(std::memory_order_relaxed);
  while (current < seq && !completed_.compare_exchange_weak(
                              current, seq, std::memory_order_seq_cst)) {
  }
  if (done_waiters_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(done_mutex_);
    done_cv_.notify_all();
  }
}

void Stream::workerLoop() {
  char name[16];
  std::snprintf(name, sizeof(name), "acc-d%d-%s", device_,
                is_default_ ? "default" : "stream");
  pthread_setname_np(pthread_self(), name);
  tls_stream = this;
  for (;;) {
    Work work;
    uint64_t seq = 0;
    if (!popNext(work, seq)) {
      return;
    }
    tls_seq = seq;
    runItem(work);
    complete(seq);
    worker_busy_.store(false, std::memory_order_release);
  }
}

void Stream::waitFor(uint64_t seq) {
  if (tls_stream == this && seq >= tls_seq) {
    seq = tls_seq - 1;
  }
  runQueuedUpTo(seq);
  const auto done = [this, seq] { return isComplete(seq); };
  if (spinUntil(done, spin_ns_, kWaiterPauseNs)) {
    return;
  }
  done_waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock<std::mutex> lock(done_mutex_);
    done_cv_.wait(lock, [&] { return done() || shuttingDown(); });
  }
  done_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void Stream::setError(accError_t error) {
  int expected = accSuccess;
  error_.compare_exchange_strong(expected, static_cast<int>(error),
                                 std::memory_order_acq_rel);
}

accError_t Stream::takeError() {
  if (error_.load(std::memory_order_acquire) == accSuccess) {
    return accSuccess;
  }
  return static_cast<accError_t>(
      error_.exchange(accSuccess, std::memory_order_acq_rel));
}

void Stream::wakeWaiters() {
  std::lock_guard<std::mutex> lock(done_mutex_);
  done_cv_.notify_all();
}

void Stream::stop() {
  std::deque<Work> dropped;
  std::thread worker;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    dropped.swap(queue_);
    worker.swap(worker_);
  }
  queue_cv_.notify_all();
  if (worker.joinable()) {
    if (worker.get_id() == std::this_thread::get_id()) {
      worker.detach();  // a kernel destroying its own stream, or exiting
    } else {
      worker.join();
    }
  }
  dropped.clear();
  complete(submitted_.load(std::memory_order_seq_cst));
}

}  // namespace accgen::emulator
