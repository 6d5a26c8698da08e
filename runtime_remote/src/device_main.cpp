// The device process of the remote driver: it owns the device memory of
// every device, runs their streams and the device functions of the loaded
// modules, and answers the host's driver calls (protocol.h).
//
// Note [Remote device memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The host reserves, for each device, a window of its own address space
// with no access at all (PROT_NONE) and passes its address here; this
// process maps the device's memory at the same addresses. Device pointers
// are then the same numbers in both processes: device functions use them
// as they are, and the host, which only ever holds them, faults if it
// dereferences one. Nothing of device memory is shared with the host;
// pinned host memory is the one thing both processes map (a memfd the host
// sends), so that copies to and from it run here, in stream order, while
// the host goes on.
//
// Usage (the driver spawns it): accgen-remote-device <lifeline fd>
//   <bytes per device> <window of device 0> [<window of device 1> ...]
// The lifeline is a socket to the host. Its first byte, from here, says
// whether the windows were mapped (kDeviceReady) or something of this
// process sat in one (kDeviceCollided, and exit status 3); after that it
// carries new connections (one per host thread); when it closes, the host
// is gone and so is the device.
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include <accgen/device.h>
#include <accgen/driver.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace accgen::remote {
namespace {

using Work = std::function<accError_t()>;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ------------------------------------------------------------------ memory

// One device's memory: first fit over an address-ordered free list.
class DeviceMemory {
 public:
  DeviceMemory(uint64_t base, uint64_t capacity)
      : base_(base), capacity_(capacity) {
    free_[base] = capacity;
  }

  accError_t allocate(uint64_t size, uint64_t& ptr) {
    const uint64_t rounded =
        (size + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < rounded) {
        continue;
      }
      ptr = it->first;
      const uint64_t left = it->second - rounded;
      free_.erase(it);
      if (left > 0) {
        free_[ptr + rounded] = left;
      }
      used_[ptr] = rounded;
      requested_[ptr] = size;
      in_use_ += rounded;
      return accSuccess;
    }
    return accErrorMemoryAllocation;
  }

  accError_t release(uint64_t ptr) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = used_.find(ptr);
    if (it == used_.end()) {
      return accErrorInvalidValue;
    }
    uint64_t start = ptr;
    uint64_t size = it->second;
    used_.erase(it);
    requested_.erase(ptr);
    in_use_ -= size;
    // Coalesce with the free neighbours.
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first == start + size) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        start = prev->first;
        size += prev->second;
        free_.erase(prev);
      }
    }
    free_[start] = size;
    // The whole pages of the free block go back to the system (a page may
    // hold other allocations too); the window stays reserved.
    constexpr uint64_t kPage = 4096;
    const uint64_t first = (start + kPage - 1) / kPage * kPage;
    const uint64_t last = (start + size) / kPage * kPage;
    if (last > first) {
      (void)madvise(reinterpret_cast<void*>(first), last - first,
                    MADV_DONTNEED);
    }
    return accSuccess;
  }

  /// The allocation holding [ptr, ptr + count), as its base and size.
  bool find(uint64_t ptr, uint64_t count, uint64_t& base,
            uint64_t& size) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = requested_.upper_bound(ptr);
    if (it == requested_.begin()) {
      return false;
    }
    --it;
    const uint64_t end = it->first + std::max<uint64_t>(it->second, 1);
    if (ptr >= end || count > end - ptr) {
      return false;
    }
    base = it->first;
    size = it->second;
    return true;
  }

  bool contains(uint64_t ptr) const {
    return ptr >= base_ && ptr < base_ + capacity_;
  }
  uint64_t capacity() const { return capacity_; }
  uint64_t inUse() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return in_use_;
  }

 private:
  uint64_t base_;
  uint64_t capacity_;
  mutable std::mutex mutex_;
  std::map<uint64_t, uint64_t> free_;
  std::map<uint64_t, uint64_t> used_;       // base -> rounded size
  std::map<uint64_t, uint64_t> requested_;  // base -> size asked for
  uint64_t in_use_ = 0;
};

// ----------------------------------------------------------------- streams

// A stream: one worker that runs its work in submission order. The first
// error of its work is sticky until taken.
class Stream {
 public:
  explicit Stream(int device) : device_(device) {
    worker_ = std::thread([this] { run(); });
  }
  ~Stream() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  int device() const { return device_; }

  uint64_t submit(Work work) {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
    cv_.notify_all();
    return ++submitted_;
  }
  uint64_t submitted() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return submitted_;
  }
  void waitFor(uint64_t seq) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return completed_ >= seq; });
  }
  bool idle() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return completed_ == submitted_;
  }
  accError_t takeError() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(error_, accSuccess);
  }
  accError_t error() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  void setError(accError_t error) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (error_ == accSuccess) {
      error_ = error;
    }
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping, and everything ran
      }
      Work work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      const accError_t error = work();
      work = nullptr;
      lock.lock();
      if (error != accSuccess && error_ == accSuccess) {
        error_ = error;
      }
      ++completed_;
      cv_.notify_all();
    }
  }

  int device_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Work> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  accError_t error_ = accSuccess;
  bool stopping_ = false;
  std::thread worker_;
};

// ------------------------------------------------------------------ events

// One recording of an event: done once the stream reached it.
struct Record {
  bool done = false;
  bool failed = false;  // the stream had failed by then
  int64_t ns = 0;
};

struct Event {
  bool timing = true;
  std::shared_ptr<Record> last;  // null: never recorded
};

// ------------------------------------------------------------------ device

struct Pinned {
  char* mapped;  // this process's mapping
  uint64_t size;
};

class Device {
 public:
  std::vector<std::unique_ptr<DeviceMemory>> memories;

  std::mutex mutex;  // the tables below
  std::unordered_map<uint64_t, std::shared_ptr<Stream>> streams;
  std::unordered_map<uint64_t, Event> events;
  std::map<uint64_t, Pinned> pinned;  // by host address
  std::unordered_map<uint64_t, void*> modules;
  std::unordered_map<uint64_t, std::pair<uint64_t, accDeviceFn_t>> functions;
  uint64_t next_id = kFirstCreatedId;

  std::mutex record_mutex;  // every Record
  std::condition_variable record_cv;

  std::shared_ptr<Stream> stream(uint64_t id) {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = streams.find(id);
    return it == streams.end() ? nullptr : it->second;
  }

  std::vector<std::shared_ptr<Stream>> streamsOf(int device) {
    const std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::shared_ptr<Stream>> found;
    for (auto& [id, stream] : streams) {
      if (device < 0 || stream->device() == device) {
        found.push_back(stream);
      }
    }
    return found;
  }

  /// The device memory of [ptr, ptr + count) as a pointer, or null.
  char* deviceRange(uint64_t ptr, uint64_t count, int* device = nullptr) {
    for (size_t d = 0; d < memories.size(); ++d) {
      uint64_t base = 0;
      uint64_t size = 0;
      if (memories[d]->contains(ptr) &&
          memories[d]->find(ptr, count, base, size)) {
        if (device != nullptr) {
          *device = static_cast<int>(d);
        }
        return reinterpret_cast<char*>(ptr);
      }
    }
    return nullptr;
  }

  /// This process's address of the pinned host range [host, host + count).
  char* pinnedRange(uint64_t host, uint64_t count) {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = pinned.upper_bound(host);
    if (it == pinned.begin()) {
      return nullptr;
    }
    --it;
    if (host - it->first > it->second.size ||
        count > it->second.size - (host - it->first)) {
      return nullptr;
    }
    return it->second.mapped + (host - it->first);
  }

  void drainDevice(int device) {
    for (auto& stream : streamsOf(device)) {
      stream->waitFor(stream->submitted());
    }
  }
};

Device& device() {
  static auto* instance = new Device();  // lives until _exit
  return *instance;
}

// ------------------------------------------------------------------ server

struct Call {
  Request request;
  std::vector<char> payload;
  int fd = -1;  // a descriptor sent with the request
  Reply reply{};
  std::vector<char> out;  // the reply's payload
};

accError_t onStream(Call& call, uint64_t id, std::shared_ptr<Stream>& stream) {
  stream = device().stream(id);
  (void)call;
  return stream == nullptr ? accErrorInvalidHandle : accSuccess;
}

void copyWork(char* dst, const char* src, uint64_t count,
              const std::shared_ptr<Stream>& stream) {
  stream->submit([=] {
    std::memcpy(dst, src, count);
    return accSuccess;
  });
}

accError_t handle(Call& call) {
  Device& dev = device();
  const Request& r = call.request;
  Reply& reply = call.reply;
  std::shared_ptr<Stream> stream;
  switch (r.op) {
    case Op::kMalloc: {
      if (r.device < 0 ||
          static_cast<size_t>(r.device) >= dev.memories.size()) {
        return accErrorInvalidDevice;
      }
      uint64_t ptr = 0;
      const accError_t error = dev.memories[r.device]->allocate(r.arg[0], ptr);
      reply.value[0] = ptr;
      return error;
    }
    case Op::kFree: {
      for (size_t d = 0; d < dev.memories.size(); ++d) {
        if (dev.memories[d]->contains(r.arg[0])) {
          uint64_t base = 0;
          uint64_t size = 0;
          if (!dev.memories[d]->find(r.arg[0], 0, base, size) ||
              base != r.arg[0]) {
            return accErrorInvalidValue;
          }
          dev.drainDevice(static_cast<int>(d));
          return dev.memories[d]->release(r.arg[0]);
        }
      }
      return accErrorInvalidValue;
    }
    case Op::kMemGetInfo: {
      DeviceMemory& memory = *dev.memories.at(r.device);
      reply.value[0] = memory.capacity() - memory.inUse();
      reply.value[1] = memory.capacity();
      return accSuccess;
    }
    case Op::kPointerInfo: {
      for (size_t d = 0; d < dev.memories.size(); ++d) {
        uint64_t base = 0;
        uint64_t size = 0;
        if (dev.memories[d]->contains(r.arg[0]) &&
            dev.memories[d]->find(r.arg[0], 0, base, size)) {
          reply.value[0] = d;
          reply.value[1] = base;
          reply.value[2] = size;
          return accSuccess;
        }
      }
      return accErrorInvalidValue;
    }
    case Op::kCopyToDevice: {
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      char* dst = dev.deviceRange(r.arg[1], r.arg[2]);
      if (dst == nullptr || call.payload.size() != r.arg[2]) {
        return accErrorInvalidValue;
      }
      auto bytes = std::make_shared<std::vector<char>>(std::move(call.payload));
      stream->submit([dst, bytes] {
        std::memcpy(dst, bytes->data(), bytes->size());
        return accSuccess;
      });
      return accSuccess;
    }
    case Op::kCopyFromPinned:
    case Op::kCopyToPinned:
    case Op::kCopyOnDevice: {
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      const uint64_t count = r.arg[3];
      char* dst = r.op == Op::kCopyToPinned ? dev.pinnedRange(r.arg[1], count)
                                            : dev.deviceRange(r.arg[1], count);
      char* src = r.op == Op::kCopyFromPinned
                      ? dev.pinnedRange(r.arg[2], count)
                      : dev.deviceRange(r.arg[2], count);
      if (dst == nullptr || src == nullptr) {
        return accErrorInvalidValue;
      }
      copyWork(dst, src, count, stream);
      return accSuccess;
    }
    case Op::kCopyToHost: {
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      const char* src = dev.deviceRange(r.arg[1], r.arg[2]);
      if (src == nullptr) {
        return accErrorInvalidValue;
      }
      call.out.resize(r.arg[2]);
      char* out = call.out.data();
      const uint64_t count = r.arg[2];
      stream->waitFor(stream->submit([=] {
        std::memcpy(out, src, count);
        return accSuccess;
      }));
      return accSuccess;
    }
    case Op::kMemset: {
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      char* dst = dev.deviceRange(r.arg[1], r.arg[3]);
      if (dst == nullptr) {
        return accErrorInvalidValue;
      }
      const int value = static_cast<int>(r.arg[2]);
      const uint64_t count = r.arg[3];
      stream->submit([=] {
        std::memset(dst, value, count);
        return accSuccess;
      });
      return accSuccess;
    }
    case Op::kStreamCreate: {
      if (r.device < 0 ||
          static_cast<size_t>(r.device) >= dev.memories.size()) {
        return accErrorInvalidDevice;
      }
      auto created = std::make_shared<Stream>(r.device);
      const std::lock_guard<std::mutex> lock(dev.mutex);
      reply.value[0] = dev.next_id++;
      dev.streams[reply.value[0]] = std::move(created);
      return accSuccess;
    }
    case Op::kStreamDestroy: {
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      stream->waitFor(stream->submitted());
      const std::lock_guard<std::mutex> lock(dev.mutex);
      dev.streams.erase(r.arg[0]);
      return accSuccess;
    }
    case Op::kStreamQuery:
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      return stream->idle() ? stream->takeError() : accErrorNotReady;
    case Op::kStreamSynchronize:
    case Op::kStreamDrain:
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      stream->waitFor(stream->submitted());
      return r.op == Op::kStreamSynchronize ? stream->takeError() : accSuccess;
    case Op::kStreamSetError:
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      stream->setError(static_cast<accError_t>(r.arg[1]));
      return accSuccess;
    case Op::kDeviceSynchronize: {
      accError_t first = accSuccess;
      for (auto& each : dev.streamsOf(r.device)) {
        each->waitFor(each->submitted());
        const accError_t error = each->takeError();
        if (first == accSuccess) {
          first = error;
        }
      }
      return first;
    }
    case Op::kStreamWaitEvent:
    case Op::kEventRecord: {
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      std::shared_ptr<Record> record;
      {
        const std::lock_guard<std::mutex> lock(dev.mutex);
        auto it = dev.events.find(r.arg[1]);
        if (it == dev.events.end()) {
          return accErrorInvalidHandle;
        }
        if (r.op == Op::kEventRecord) {
          it->second.last = std::make_shared<Record>();
        }
        record = it->second.last;
      }
      if (record == nullptr) {
        return accSuccess;  // waiting for an event never recorded
      }
      Stream* self = stream.get();
      if (r.op == Op::kEventRecord) {
        stream->submit([record, self, &dev] {
          const bool failed = self->error() != accSuccess;
          const std::lock_guard<std::mutex> lock(dev.record_mutex);
          record->done = true;
          record->failed = failed;
          record->ns = nowNs();
          dev.record_cv.notify_all();
          return accSuccess;
        });
      } else {
        stream->submit([record, &dev] {
          std::unique_lock<std::mutex> lock(dev.record_mutex);
          dev.record_cv.wait(lock, [&] { return record->done; });
          // What the stream runs next would read what the failed work left.
          return record->failed ? accErrorLaunchFailure : accSuccess;
        });
      }
      return accSuccess;
    }
    case Op::kEventCreate: {
      const std::lock_guard<std::mutex> lock(dev.mutex);
      reply.value[0] = dev.next_id++;
      dev.events[reply.value[0]].timing = r.arg[0] != 0;
      return accSuccess;
    }
    case Op::kEventDestroy: {
      const std::lock_guard<std::mutex> lock(dev.mutex);
      return dev.events.erase(r.arg[0]) == 1 ? accSuccess
                                             : accErrorInvalidHandle;
    }
    case Op::kEventQuery:
    case Op::kEventSynchronize: {
      std::shared_ptr<Record> record;
      {
        const std::lock_guard<std::mutex> lock(dev.mutex);
        auto it = dev.events.find(r.arg[0]);
        if (it == dev.events.end()) {
          return accErrorInvalidHandle;
        }
        record = it->second.last;
      }
      if (record == nullptr) {
        return accSuccess;
      }
      std::unique_lock<std::mutex> lock(dev.record_mutex);
      if (r.op == Op::kEventQuery) {
        return record->done ? accSuccess : accErrorNotReady;
      }
      dev.record_cv.wait(lock, [&] { return record->done; });
      return accSuccess;
    }
    case Op::kEventElapsed: {
      std::shared_ptr<Record> records[2];
      {
        const std::lock_guard<std::mutex> lock(dev.mutex);
        for (int i = 0; i < 2; ++i) {
          auto it = dev.events.find(r.arg[i]);
          if (it == dev.events.end()) {
            return accErrorInvalidHandle;
          }
          if (!it->second.timing || it->second.last == nullptr) {
            return accErrorInvalidHandle;
          }
          records[i] = it->second.last;
        }
      }
      const std::lock_guard<std::mutex> lock(dev.record_mutex);
      if (!records[0]->done || !records[1]->done) {
        return accErrorNotReady;
      }
      reply.value[0] = static_cast<uint64_t>(records[1]->ns - records[0]->ns);
      return accSuccess;
    }
    case Op::kPinnedRegister: {
      if (call.fd < 0) {
        return accErrorInvalidValue;
      }
      void* mapped = mmap(nullptr, r.arg[1], PROT_READ | PROT_WRITE, MAP_SHARED,
                          call.fd, 0);
      if (mapped == MAP_FAILED) {
        return accErrorMemoryAllocation;
      }
      const std::lock_guard<std::mutex> lock(dev.mutex);
      dev.pinned[r.arg[0]] = Pinned{static_cast<char*>(mapped), r.arg[1]};
      return accSuccess;
    }
    case Op::kPinnedUnregister: {
      // Copies to and from it may still be queued on any device.
      dev.drainDevice(-1);
      const std::lock_guard<std::mutex> lock(dev.mutex);
      auto it = dev.pinned.find(r.arg[0]);
      if (it == dev.pinned.end()) {
        return accErrorInvalidValue;
      }
      munmap(it->second.mapped, it->second.size);
      dev.pinned.erase(it);
      return accSuccess;
    }
    case Op::kModuleLoad: {
      const std::string path(call.payload.begin(), call.payload.end());
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        return accErrorInvalidValue;
      }
      const std::lock_guard<std::mutex> lock(dev.mutex);
      reply.value[0] = dev.next_id++;
      dev.modules[reply.value[0]] = handle;
      return accSuccess;
    }
    case Op::kModuleUnload: {
      void* handle = nullptr;
      {
        const std::lock_guard<std::mutex> lock(dev.mutex);
        auto it = dev.modules.find(r.arg[0]);
        if (it == dev.modules.end()) {
          return accErrorInvalidHandle;
        }
        handle = it->second;
        dev.modules.erase(it);
        std::erase_if(dev.functions, [&](const auto& entry) {
          return entry.second.first == r.arg[0];
        });
      }
      dev.drainDevice(-1);
      dlclose(handle);
      return accSuccess;
    }
    case Op::kModuleFunction: {
      const std::string name(call.payload.begin(), call.payload.end());
      const std::lock_guard<std::mutex> lock(dev.mutex);
      auto it = dev.modules.find(r.arg[0]);
      if (it == dev.modules.end()) {
        return accErrorInvalidHandle;
      }
      void* symbol = dlsym(it->second, name.c_str());
      if (symbol == nullptr) {
        return accErrorInvalidValue;
      }
      reply.value[0] = dev.next_id++;
      dev.functions[reply.value[0]] = {r.arg[0],
                                       reinterpret_cast<accDeviceFn_t>(symbol)};
      return accSuccess;
    }
    case Op::kLaunchFunction: {
      if (accError_t e = onStream(call, r.arg[0], stream); e != accSuccess) {
        return e;
      }
      accDeviceFn_t fn = nullptr;
      {
        const std::lock_guard<std::mutex> lock(dev.mutex);
        auto it = dev.functions.find(r.arg[1]);
        if (it == dev.functions.end()) {
          return accErrorInvalidHandle;
        }
        fn = it->second.second;
      }
      auto args = std::make_shared<std::vector<char>>(std::move(call.payload));
      stream->submit([fn, args] { return fn(args->data(), args->size()); });
      return accSuccess;
    }
  }
  return accErrorInvalidValue;
}

// Serves one host thread's connection until the host closes it.
void serve(int fd) {
  for (;;) {
    Call call;
    if (!readWithFd(fd, &call.request, sizeof(call.request), &call.fd)) {
      break;
    }
    call.payload.resize(call.request.payload);
    if (!readAll(fd, call.payload.data(), call.payload.size())) {
      break;
    }
    try {
      call.reply.error = handle(call);
    } catch (...) {
      call.reply.error = accErrorMemoryAllocation;
    }
    if (call.fd >= 0) {
      close(call.fd);  // a pinned mapping outlives its descriptor
    }
    call.reply.payload = call.out.size();
    if (!writeAll(fd, &call.reply, sizeof(call.reply)) ||
        !writeAll(fd, call.out.data(), call.out.size())) {
      break;
    }
  }
  close(fd);
}

}  // namespace
}  // namespace accgen::remote

int main(int argc, char** argv) {
  using namespace accgen::remote;
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: accgen-remote-device <lifeline fd> <bytes per device> "
                 "<window address>...\n"
                 "It is started by the accgen remote driver.\n");
    return 2;
  }
  const int lifeline = std::atoi(argv[1]);
  const uint64_t capacity = std::strtoull(argv[2], nullptr, 10);
  Device& dev = device();
  for (int i = 3; i < argc; ++i) {
    const uint64_t base = std::strtoull(argv[i], nullptr, 16);
    void* mapped =
        mmap(reinterpret_cast<void*>(base), capacity, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
             -1, 0);
    if (mapped != reinterpret_cast<void*>(base)) {
      // Something of this process sits there: the host picks other windows
      // (Note [Where device windows go], client.cpp).
      if (mapped != MAP_FAILED) {
        munmap(mapped, capacity);
      }
      writeAll(lifeline, &kDeviceCollided, 1);
      return 3;
    }
    dev.memories.push_back(std::make_unique<DeviceMemory>(base, capacity));
    const int device_index = i - 3;
    dev.streams[device_index + 1] = std::make_shared<Stream>(device_index);
  }
  if (!writeAll(lifeline, &kDeviceReady, 1)) {
    return 0;
  }
  // Each message on the lifeline brings one connection. End of stream: the
  // host process is gone, whatever way it went; so is its device.
  for (;;) {
    char tag = 0;
    int fd = -1;
    if (!readWithFd(lifeline, &tag, 1, &fd)) {
      _exit(0);
    }
    if (fd >= 0) {
      std::thread([fd] { serve(fd); }).detach();
    }
  }
}
