// The remote driver: accgen/driver.h over a device process
// (device_main.cpp) that holds device memory out of the host's reach.
//
// Note [The remote driver]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The host process reaches its devices only through this library. The
// first call spawns the device process, reserves an inaccessible window of
// addresses per device (Note [Remote device memory] in device_main.cpp)
// and keeps a lifeline socket to it; every host thread then talks to the
// device over a connection of its own (protocol.h). Copies move bytes over
// that connection, or through pinned host memory that both processes map;
// device code is launched by name (accLaunchFunction) and runs there. Host
// kernels (accLaunchKernel and its kin) are host functions in stream order:
// they run on the launching thread once the stream's earlier work is done,
// and they may be given pinned host memory but never device memory
// (accErrorNotSupported): the host cannot address it.
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <accgen/driver.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "protocol.h"

extern char** environ;

struct accStream_st {
  uint64_t id;
  int device;
  int priority;
};

struct accEvent_st {
  uint64_t id;
  unsigned flags;
};

struct accModule_st {
  uint64_t id;
};

struct accFunction_st {
  uint64_t id;
  accModule_t module;
};

namespace accgen::remote {
namespace {

constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -2;
constexpr int kMaxDevices = 16;
constexpr uint64_t kWindowAlignment = 2ull << 20;
constexpr uint64_t kDefaultMemory = 1ull << 30;
constexpr int kDefaultDevices = 2;

struct PinnedBlock {
  uint64_t size;
};

class Host {
 public:
  // Before the start: what accInit gave.
  accInitParams params{};
  bool started = false;
  accError_t start_error = accSuccess;
  pid_t owner = 0;  // the process that started the device
  pid_t device_pid = 0;
  int lifeline = -1;
  int count = 0;
  uint64_t capacity = 0;
  uint64_t window = 0;  // device 0's window
  uint64_t stride = 0;  // between windows
  std::vector<std::unique_ptr<accStream_st>> defaults;

  std::mutex mutex;  // what follows, and the lifeline
  std::unordered_set<accStream_t> streams;
  std::unordered_set<accEvent_t> events;
  std::unordered_set<accModule_t> modules;
  std::unordered_set<accFunction_t> functions;
  std::map<uint64_t, PinnedBlock> pinned;  // by address

  /// Handles the host hands out (streams, events, modules, functions) are
  /// live from track() to untrack(); a call checks its handle with has().
  template <class T>
  void track(std::unordered_set<T*>& live, T* handle) {
    const std::lock_guard<std::mutex> lock(mutex);
    live.insert(handle);
  }
  template <class T>
  bool untrack(std::unordered_set<T*>& live, T* handle) {
    const std::lock_guard<std::mutex> lock(mutex);
    return live.erase(handle) == 1;
  }
  template <class T>
  bool has(const std::unordered_set<T*>& live, T* handle) {
    const std::lock_guard<std::mutex> lock(mutex);
    return live.count(handle) == 1;
  }

  /// -1 unless `ptr` lies in a device's window.
  int deviceOf(const void* ptr) const {
    const auto address = reinterpret_cast<uint64_t>(ptr);
    if (count == 0 || address < window ||
        address >= window + stride * static_cast<uint64_t>(count)) {
      return -1;
    }
    return static_cast<int>((address - window) / stride);
  }

  /// Whether [ptr, ptr + size) lies in one pinned block.
  bool isPinned(const void* ptr, uint64_t size) {
    const auto address = reinterpret_cast<uint64_t>(ptr);
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = pinned.upper_bound(address);
    if (it == pinned.begin()) {
      return false;
    }
    --it;
    return address - it->first < std::max<uint64_t>(it->second.size, 1) &&
           size <= it->second.size - (address - it->first);
  }
};

Host& host() {
  static auto* instance = new Host();  // used until the process exits
  return *instance;
}

thread_local int tls_device = 0;

uint64_t envOr(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return fallback;
  }
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  return end != nullptr && *end == '\0' ? value : fallback;
}

// The device program: ACCGEN_REMOTE_DEVICE_PROGRAM, else
// accgen-remote-device beside the library or program holding this driver,
// else in ../bin from there.
std::string deviceProgram() {
  if (const char* named = std::getenv("ACCGEN_REMOTE_DEVICE_PROGRAM");
      named != nullptr && *named != '\0') {
    return named;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&accGetDeviceCount), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "accgen-remote-device";
  }
  std::string dir = info.dli_fname;
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  for (const char* relative : {"", "../bin/"}) {
    std::string candidate = dir + relative + "accgen-remote-device";
    if (access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return dir + "accgen-remote-device";
}

// Note [Where device windows go]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The device process maps each device's memory at the addresses the host
// reserved, so those addresses must be free in both address spaces. Under
// address-space randomization, the device process's own libraries, stack
// and heap land anywhere in the usual mmap area, and a window there can
// collide with them (about one start in a hundred, for two 1 GiB devices).
// So the host asks for its windows in the middle of the address space,
// where neither process's loader or allocator places anything (below it:
// the heap, the program, AddressSanitizer's shadow; above it: the mmap area
// and AddressSanitizer's allocator at 0x600000000000); and the device
// process reports whether it mapped them. On a collision the host tries the
// next span of addresses, kStartAttempts times in all.
constexpr uint64_t kWindowHint = 0x300000000000ull;
constexpr int kStartAttempts = 8;

// Spawns the device process for the windows at h.window; its lifeline in
// `lifeline`. The device's first byte on the lifeline says how its mapping
// went: kDeviceReady, or kDeviceCollided and it exits.
accError_t spawnDevice(Host& h, const std::string& program, pid_t& pid,
                       int& lifeline) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return accErrorMemoryAllocation;
  }
  // The child's end becomes its descriptor 3; dup2 onto itself would keep
  // close-on-exec.
  constexpr int kChildFd = 3;
  if (pair[1] == kChildFd) {
    const int moved = fcntl(pair[1], F_DUPFD_CLOEXEC, 10);
    close(pair[1]);
    pair[1] = moved;
  }
  std::vector<std::string> args = {program, std::to_string(kChildFd),
                                   std::to_string(h.capacity)};
  for (int d = 0; d < h.count; ++d) {
    char address[32];
    std::snprintf(address, sizeof(address), "%llx",
                  static_cast<unsigned long long>(h.window + d * h.stride));
    args.emplace_back(address);
  }
  std::vector<char*> argv;
  for (std::string& arg : args) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], kChildFd);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // Its own process group: a terminal's Ctrl-C is the host's to handle.
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, &attributes,
                                  argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(pair[1]);
  if (spawned != 0) {
    std::fprintf(stderr,
                 "accgen remote driver: cannot start the device process %s: "
                 "%s (set ACCGEN_REMOTE_DEVICE_PROGRAM)\n",
                 program.c_str(), std::strerror(spawned));
    close(pair[0]);
    return accErrorNotInitialized;
  }
  lifeline = pair[0];
  return accSuccess;
}

accError_t startDevice(Host& h) {
  h.count = static_cast<int>(
      envOr("ACCGEN_REMOTE_DEVICE_COUNT",
            h.params.deviceCount > 0 ? h.params.deviceCount : kDefaultDevices));
  h.capacity = envOr(
      "ACCGEN_REMOTE_MEMORY_BYTES",
      h.params.memoryPerDevice > 0 ? h.params.memoryPerDevice : kDefaultMemory);
  if (h.count < 0 || h.count > kMaxDevices || h.capacity == 0) {
    return accErrorInvalidValue;
  }
  // Note [Remote device memory]: an inaccessible window per device, with a
  // gap between windows.
  const uint64_t rounded =
      (h.capacity + kWindowAlignment - 1) / kWindowAlignment * kWindowAlignment;
  h.stride = rounded + kWindowAlignment;
  const uint64_t span = h.stride * static_cast<uint64_t>(h.count);
  const std::string program = deviceProgram();
  std::string tried;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    // Note [Where device windows go]: a hint, which the kernel honours
    // where the range is free in this process.
    void* reserved = nullptr;
    if (span > 0) {
      reserved = mmap(
          reinterpret_cast<void*>(kWindowHint + attempt * (span + rounded)),
          span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (reserved == MAP_FAILED) {
        return accErrorMemoryAllocation;
      }
    }
    h.window = reinterpret_cast<uint64_t>(reserved);
    pid_t pid = 0;
    int lifeline = -1;
    if (accError_t e = spawnDevice(h, program, pid, lifeline);
        e != accSuccess) {
      munmap(reserved, span);
      return e;
    }
    char state = 0;
    if (readAll(lifeline, &state, 1) && state == kDeviceReady) {
      h.device_pid = pid;
      h.lifeline = lifeline;
      h.owner = getpid();
      for (int d = 0; d < h.count; ++d) {
        h.defaults.push_back(std::make_unique<accStream_st>(
            accStream_st{static_cast<uint64_t>(d) + 1, d, kLeastPriority}));
      }
      return accSuccess;
    }
    close(lifeline);
    int status = 0;
    waitpid(pid, &status, 0);
    if (span > 0) {
      munmap(reserved, span);
    }
    if (state != kDeviceCollided) {
      std::fprintf(
          stderr,
          "accgen remote driver: the device process %s ended before "
          "it was ready (%s %d)\n",
          program.c_str(), WIFSIGNALED(status) ? "signal" : "exit status",
          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      return accErrorNotInitialized;
    }
    char address[32];
    std::snprintf(address, sizeof(address), " 0x%llx",
                  static_cast<unsigned long long>(h.window));
    tried += address;
  }
  std::fprintf(stderr,
               "accgen remote driver: the device process could not map device "
               "memory at any of the windows tried:%s\n",
               tried.c_str());
  h.window = 0;
  return accErrorNotInitialized;
}

// Starts the device on first use; accErrorNotInitialized in a forked
// child, which must not talk over its parent's connections.
accError_t ready(Host*& out) {
  Host& h = host();
  static std::once_flag once;
  std::call_once(once, [&] {
    h.start_error = startDevice(h);
    h.started = true;
  });
  if (h.start_error != accSuccess) {
    return h.start_error;
  }
  if (getpid() != h.owner) {
    return accErrorNotInitialized;
  }
  out = &h;
  return accSuccess;
}

// This thread's connection to the device process.
class Connection {
 public:
  ~Connection() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }

  accError_t call(Host& h, const Request& request, const void* payload,
                  Reply& reply, std::vector<char>* out = nullptr,
                  int passed = -1) {
    if (fd_ < 0) {
      int pair[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        return accErrorMemoryAllocation;
      }
      const char tag = 'c';
      bool sent = false;
      {
        const std::lock_guard<std::mutex> lock(h.mutex);
        sent = sendWithFd(h.lifeline, &tag, 1, pair[1]);
      }
      close(pair[1]);
      if (!sent) {
        close(pair[0]);
        return lost();
      }
      fd_ = pair[0];
    }
    const bool sent =
        (passed >= 0 ? sendWithFd(fd_, &request, sizeof(request), passed)
                     : writeAll(fd_, &request, sizeof(request))) &&
        writeAll(fd_, payload, request.payload);
    if (!sent || !readAll(fd_, &reply, sizeof(reply))) {
      return lost();
    }
    std::vector<char> discard;
    std::vector<char>& into = out != nullptr ? *out : discard;
    into.resize(reply.payload);
    if (!readAll(fd_, into.data(), into.size())) {
      return lost();
    }
    return static_cast<accError_t>(reply.error);
  }

 private:
  static accError_t lost() {
    static std::once_flag once;
    std::call_once(once, [] {
      std::fprintf(stderr,
                   "accgen remote driver: the device process is gone\n");
    });
    return accErrorLaunchFailure;
  }

  int fd_ = -1;
};

thread_local Connection tls_connection;

/// One request to the device: ready() first, then the call.
accError_t send(Op op, int device, std::initializer_list<uint64_t> args,
                Reply* reply_out = nullptr, const void* payload = nullptr,
                uint64_t payload_size = 0, std::vector<char>* out = nullptr,
                int passed = -1) {
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  Request request{};
  request.op = op;
  request.device = device;
  size_t i = 0;
  for (uint64_t arg : args) {
    request.arg[i++] = arg;
  }
  request.payload = payload_size;
  Reply reply{};
  const accError_t error =
      tls_connection.call(*h, request, payload, reply, out, passed);
  if (reply_out != nullptr) {
    *reply_out = reply;
  }
  return error;
}

// NULL: the current device's default stream; else a live stream. `h` is
// the ready driver.
accError_t resolve(accStream_t stream, accStream_t& out, Host*& h) {
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (stream == nullptr) {
    if (tls_device >= h->count) {
      return accErrorInvalidDevice;
    }
    out = h->defaults[tls_device].get();
    return accSuccess;
  }
  for (const auto& each : h->defaults) {
    if (each.get() == stream) {
      out = stream;
      return accSuccess;
    }
  }
  if (!h->has(h->streams, stream)) {
    return accErrorInvalidHandle;
  }
  out = stream;
  return accSuccess;
}

accError_t resolve(accStream_t stream, accStream_t& out) {
  Host* h = nullptr;
  return resolve(stream, out, h);
}

uint64_t address(const void* ptr) {
  return reinterpret_cast<uint64_t>(ptr);
}

// Note [The remote driver]: host kernels may be given host memory only.
accError_t checkHostBuffers(Host& h, const void* const* buffers, size_t n) {
  if (buffers == nullptr && n != 0) {
    return accErrorInvalidValue;
  }
  for (size_t i = 0; i < n; ++i) {
    if (buffers[i] == nullptr) {
      continue;
    }
    if (h.deviceOf(buffers[i]) >= 0) {
      return accErrorNotSupported;
    }
    if (!h.isPinned(buffers[i], 0)) {
      return accErrorInvalidValue;
    }
  }
  return accSuccess;
}

// A host function in stream order: after the stream's earlier work, on the
// calling thread. Its error becomes the stream's.
accError_t runHostFunction(accStream_t stream, accKernelFn_t fn,
                           void* user_data, const void* const* buffers,
                           size_t n) {
  Host* h = nullptr;
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target, h); error != accSuccess) {
    return error;
  }
  if (fn == nullptr) {
    return accErrorInvalidValue;
  }
  if (accError_t error = checkHostBuffers(*h, buffers, n);
      error != accSuccess) {
    return error;
  }
  if (accError_t error = send(Op::kStreamDrain, target->device, {target->id});
      error != accSuccess) {
    return error;
  }
  const accError_t failed = fn(user_data);
  if (failed != accSuccess) {
    return send(Op::kStreamSetError, target->device,
                {target->id, static_cast<uint64_t>(failed)});
  }
  return accSuccess;
}

}  // namespace
}  // namespace accgen::remote

using namespace accgen::remote;

extern "C" {

accError_t accInit(const accInitParams* params) {
  Host& h = host();
  if (h.started) {
    return accErrorNotInitialized;
  }
  if (params == nullptr || params->deviceCount < 0 ||
      params->deviceCount > kMaxDevices) {
    return accErrorInvalidValue;
  }
  h.params = *params;
  return accSuccess;
}

// ----------------------------------------------------------------- devices

accError_t accGetDeviceCount(int* count) {
  if (count == nullptr) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  *count = h->count;
  return accSuccess;
}

accError_t accGetDevice(int* device) {
  if (device == nullptr) {
    return accErrorInvalidValue;
  }
  *device = tls_device;
  return accSuccess;
}

accError_t accSetDevice(int device) {
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (device < 0 || device >= h->count) {
    return accErrorInvalidDevice;
  }
  tls_device = device;
  return accSuccess;
}

accError_t accGetDeviceProperties(accDeviceProp* prop, int device) {
  if (prop == nullptr) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (device < 0 || device >= h->count) {
    return accErrorInvalidDevice;
  }
  std::memset(prop, 0, sizeof(*prop));
  std::strncpy(prop->name, "accgen remote device", sizeof(prop->name) - 1);
  prop->totalGlobalMem = h->capacity;
  const unsigned threads = std::thread::hardware_concurrency();
  prop->multiProcessorCount = threads > 0 ? static_cast<int>(threads) : 1;
  prop->major = 1;
  prop->minor = 0;
  return accSuccess;
}

accError_t accDeviceGetAttribute(int* value, accDeviceAttr attribute,
                                 int device) {
  if (value == nullptr) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (device < 0 || device >= h->count) {
    return accErrorInvalidDevice;
  }
  switch (attribute) {
    case accDevAttrHostAddressable:
      *value = 0;
      return accSuccess;
  }
  return accErrorInvalidValue;
}

accError_t accDeviceSynchronize(void) {
  return send(Op::kDeviceSynchronize, tls_device, {});
}

// ------------------------------------------------------------------ memory

accError_t accMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) {
    return accErrorInvalidValue;
  }
  *ptr = nullptr;
  if (size == 0) {
    return accSuccess;
  }
  Reply reply{};
  const accError_t error = send(Op::kMalloc, tls_device, {size}, &reply);
  if (error == accSuccess) {
    *ptr = reinterpret_cast<void*>(reply.value[0]);
  }
  return error;
}

accError_t accFree(void* ptr) {
  if (ptr == nullptr) {
    return accSuccess;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  const int device = h->deviceOf(ptr);
  if (device < 0) {
    return accErrorInvalidValue;
  }
  return send(Op::kFree, device, {address(ptr)});
}

accError_t accMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) {
    return accErrorInvalidValue;
  }
  *ptr = nullptr;
  if (size == 0) {
    return accSuccess;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  // Note [Remote device memory]: pinned memory is what both processes map.
  const int fd = memfd_create("accgen-pinned", MFD_CLOEXEC);
  if (fd < 0) {
    return accErrorMemoryAllocation;
  }
  void* mapped = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(size)) == 0) {
    mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (mapped == MAP_FAILED) {
    close(fd);
    return accErrorMemoryAllocation;
  }
  const accError_t error =
      send(Op::kPinnedRegister, tls_device, {address(mapped), size}, nullptr,
           nullptr, 0, nullptr, fd);
  close(fd);
  if (error != accSuccess) {
    munmap(mapped, size);
    return error;
  }
  {
    const std::lock_guard<std::mutex> lock(h->mutex);
    h->pinned[address(mapped)] = PinnedBlock{size};
  }
  *ptr = mapped;
  return accSuccess;
}

accError_t accFreeHost(void* ptr) {
  if (ptr == nullptr) {
    return accSuccess;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  uint64_t size = 0;
  {
    const std::lock_guard<std::mutex> lock(h->mutex);
    auto it = h->pinned.find(address(ptr));
    if (it == h->pinned.end()) {
      return accErrorInvalidValue;
    }
    size = it->second.size;
    h->pinned.erase(it);
  }
  const accError_t error =
      send(Op::kPinnedUnregister, tls_device, {address(ptr)});
  munmap(ptr, size);
  return error;
}

accError_t accMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) {
    return accErrorInvalidValue;
  }
  Reply reply{};
  const accError_t error = send(Op::kMemGetInfo, tls_device, {}, &reply);
  if (error == accSuccess) {
    *free_bytes = reply.value[0];
    *total_bytes = reply.value[1];
  }
  return error;
}

accError_t accPointerGetAttributes(accPointerAttributes* attributes,
                                   const void* ptr) {
  if (attributes == nullptr) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  attributes->type = accMemoryTypeUnregistered;
  attributes->device = -1;
  attributes->basePointer = nullptr;
  attributes->allocationSize = 0;
  if (ptr == nullptr) {
    return accSuccess;
  }
  if (h->deviceOf(ptr) >= 0) {
    Reply reply{};
    if (send(Op::kPointerInfo, tls_device, {address(ptr)}, &reply) ==
        accSuccess) {
      attributes->type = accMemoryTypeDevice;
      attributes->device = static_cast<int>(reply.value[0]);
      attributes->basePointer = reinterpret_cast<void*>(reply.value[1]);
      attributes->allocationSize = reply.value[2];
    }
    return accSuccess;
  }
  const std::lock_guard<std::mutex> lock(h->mutex);
  auto it = h->pinned.upper_bound(address(ptr));
  if (it != h->pinned.begin()) {
    --it;
    if (address(ptr) - it->first < it->second.size) {
      attributes->type = accMemoryTypeHost;
      attributes->basePointer = reinterpret_cast<void*>(it->first);
      attributes->allocationSize = it->second.size;
    }
  }
  return accSuccess;
}

accError_t accMemsetAsync(void* dev_ptr, int value, size_t count,
                          accStream_t stream) {
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target); error != accSuccess) {
    return error;
  }
  if (count == 0) {
    return accSuccess;
  }
  return send(
      Op::kMemset, target->device,
      {target->id, address(dev_ptr),
       static_cast<uint64_t>(static_cast<unsigned char>(value)), count});
}

accError_t accMemset(void* dev_ptr, int value, size_t count) {
  if (accError_t error = accMemsetAsync(dev_ptr, value, count, nullptr);
      error != accSuccess) {
    return error;
  }
  return accStreamSynchronize(nullptr);
}

accError_t accMemcpyAsync(void* dst, const void* src, size_t count,
                          accMemcpyKind kind, accStream_t stream) {
  Host* h = nullptr;
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target, h); error != accSuccess) {
    return error;
  }
  if (count == 0) {
    return accSuccess;
  }
  if (dst == nullptr || src == nullptr) {
    return accErrorInvalidValue;
  }
  const bool dst_device = h->deviceOf(dst) >= 0;
  const bool src_device = h->deviceOf(src) >= 0;
  if (kind == accMemcpyDefault) {
    kind = src_device
               ? (dst_device ? accMemcpyDeviceToDevice : accMemcpyDeviceToHost)
               : (dst_device ? accMemcpyHostToDevice : accMemcpyHostToHost);
  }
  const bool expect_dst =
      kind == accMemcpyHostToDevice || kind == accMemcpyDeviceToDevice;
  const bool expect_src =
      kind == accMemcpyDeviceToHost || kind == accMemcpyDeviceToDevice;
  if (kind < accMemcpyHostToHost || kind > accMemcpyDeviceToDevice ||
      dst_device != expect_dst || src_device != expect_src) {
    return accErrorInvalidValue;
  }
  const uint64_t id = target->id;
  const int device = target->device;
  switch (kind) {
    case accMemcpyHostToDevice:
      if (h->isPinned(src, count)) {
        return send(Op::kCopyFromPinned, device,
                    {id, address(dst), address(src), count});
      }
      // Pageable: the bytes go with the request, consumed on return.
      return send(Op::kCopyToDevice, device, {id, address(dst), count}, nullptr,
                  src, count);
    case accMemcpyDeviceToHost: {
      if (h->isPinned(dst, count)) {
        return send(Op::kCopyToPinned, device,
                    {id, address(dst), address(src), count});
      }
      // Pageable: filled before return, once the stream reached the copy.
      std::vector<char> bytes;
      const accError_t error =
          send(Op::kCopyToHost, device, {id, address(src), count}, nullptr,
               nullptr, 0, &bytes);
      if (error == accSuccess) {
        std::memcpy(dst, bytes.data(), count);
      }
      return error;
    }
    case accMemcpyDeviceToDevice:
      return send(Op::kCopyOnDevice, device,
                  {id, address(dst), address(src), count});
    default: {
      if (accError_t error = send(Op::kStreamDrain, device, {id});
          error != accSuccess) {
        return error;
      }
      std::memmove(dst, src, count);
      return accSuccess;
    }
  }
}

accError_t accMemcpy(void* dst, const void* src, size_t count,
                     accMemcpyKind kind) {
  if (accError_t error = accMemcpyAsync(dst, src, count, kind, nullptr);
      error != accSuccess) {
    return error;
  }
  return accStreamSynchronize(nullptr);
}

// ----------------------------------------------------------------- streams

accError_t accDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least == nullptr || greatest == nullptr) {
    return accErrorInvalidValue;
  }
  *least = kLeastPriority;
  *greatest = kGreatestPriority;
  return accSuccess;
}

accError_t accStreamCreate(accStream_t* stream) {
  return accStreamCreateWithPriority(stream, 0, kLeastPriority);
}

accError_t accStreamCreateWithPriority(accStream_t* stream, unsigned flags,
                                       int priority) {
  if (stream == nullptr || flags != 0) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  Reply reply{};
  if (accError_t error = send(Op::kStreamCreate, tls_device, {}, &reply);
      error != accSuccess) {
    return error;
  }
  priority = std::clamp(priority, kGreatestPriority, kLeastPriority);
  *stream = new accStream_st{reply.value[0], tls_device, priority};
  h->track(h->streams, *stream);
  return accSuccess;
}

accError_t accStreamDestroy(accStream_t stream) {
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (!h->untrack(h->streams, stream)) {
    return accErrorInvalidHandle;
  }
  const accError_t error =
      send(Op::kStreamDestroy, stream->device, {stream->id});
  delete stream;
  return error;
}

accError_t accStreamQuery(accStream_t stream) {
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target); error != accSuccess) {
    return error;
  }
  return send(Op::kStreamQuery, target->device, {target->id});
}

accError_t accStreamSynchronize(accStream_t stream) {
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target); error != accSuccess) {
    return error;
  }
  return send(Op::kStreamSynchronize, target->device, {target->id});
}

accError_t accStreamWaitEvent(accStream_t stream, accEvent_t event,
                              unsigned flags) {
  Host* h = nullptr;
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target, h); error != accSuccess) {
    return error;
  }
  if (flags != 0) {
    return accErrorInvalidValue;
  }
  if (!h->has(h->events, event)) {
    return accErrorInvalidHandle;
  }
  return send(Op::kStreamWaitEvent, target->device, {target->id, event->id});
}

accError_t accStreamGetDevice(accStream_t stream, int* device) {
  if (device == nullptr) {
    return accErrorInvalidValue;
  }
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target); error != accSuccess) {
    return error;
  }
  *device = target->device;
  return accSuccess;
}

accError_t accStreamGetPriority(accStream_t stream, int* priority) {
  if (priority == nullptr) {
    return accErrorInvalidValue;
  }
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target); error != accSuccess) {
    return error;
  }
  *priority = target->priority;
  return accSuccess;
}

accError_t accGetDefaultStream(int device, accStream_t* stream) {
  if (stream == nullptr) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (device < 0 || device >= h->count) {
    return accErrorInvalidDevice;
  }
  *stream = h->defaults[device].get();
  return accSuccess;
}

// Note [The remote driver]: host kernels are host functions.
accError_t accLaunchKernel(accStream_t stream, accKernelFn_t fn,
                           void* user_data, const void* const* buffers,
                           size_t num_buffers) {
  return runHostFunction(stream, fn, user_data, buffers, num_buffers);
}

accError_t accLaunchKernelEx(accStream_t stream, accKernelFn_t fn,
                             void* user_data, const void* const* buffers,
                             size_t num_buffers, unsigned flags) {
  if (flags == accLaunchIfIdle) {
    // Declined: a host function waits for its stream.
    accStream_t target = nullptr;
    if (accError_t error = resolve(stream, target); error != accSuccess) {
      return error;
    }
    return fn == nullptr ? accErrorInvalidValue : accErrorNotReady;
  }
  if (flags != accLaunchDefault && flags != accLaunchWaitsOutside) {
    return accErrorInvalidValue;
  }
  return runHostFunction(stream, fn, user_data, buffers, num_buffers);
}

accError_t accLaunchKernelSync(accStream_t stream, accKernelFn_t fn,
                               void* user_data, const void* const* buffers,
                               size_t num_buffers) {
  Host* h = nullptr;
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target, h); error != accSuccess) {
    return error;
  }
  if (fn == nullptr) {
    return accErrorInvalidValue;
  }
  if (accError_t error = checkHostBuffers(*h, buffers, num_buffers);
      error != accSuccess) {
    return error;
  }
  if (accError_t error = accStreamSynchronize(target); error != accSuccess) {
    return error;
  }
  return fn(user_data);
}

// The host never addresses this driver's device memory, so no host kernel
// takes device memory into its access.
accError_t accKernelAddBuffer(const void* /*ptr*/) {
  return accErrorNotSupported;
}

accError_t accLaunchKernelOwned(accStream_t stream, accKernelFn_t fn,
                                void* user_data, accReleaseFn_t release,
                                const void* const* buffers,
                                size_t num_buffers) {
  const accError_t error =
      runHostFunction(stream, fn, user_data, buffers, num_buffers);
  if (release != nullptr) {
    release(user_data);
  }
  return error;
}

// ------------------------------------------------------------- device code

accError_t accModuleLoad(accModule_t* module, const char* path) {
  if (module == nullptr || path == nullptr) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  // The device process resolves the path itself, from anywhere.
  char resolved[PATH_MAX];
  if (realpath(path, resolved) == nullptr) {
    return accErrorInvalidValue;
  }
  Reply reply{};
  if (accError_t error = send(Op::kModuleLoad, tls_device, {}, &reply, resolved,
                              std::strlen(resolved));
      error != accSuccess) {
    return error;
  }
  *module = new accModule_st{reply.value[0]};
  h->track(h->modules, *module);
  return accSuccess;
}

accError_t accModuleUnload(accModule_t module) {
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  {
    const std::lock_guard<std::mutex> lock(h->mutex);
    if (h->modules.erase(module) == 0) {
      return accErrorInvalidHandle;
    }
    std::erase_if(h->functions, [&](accFunction_t f) {
      if (f->module != module) {
        return false;
      }
      delete f;
      return true;
    });
  }
  const accError_t error = send(Op::kModuleUnload, tls_device, {module->id});
  delete module;
  return error;
}

accError_t accModuleGetFunction(accFunction_t* function, accModule_t module,
                                const char* name) {
  if (function == nullptr || name == nullptr) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (!h->has(h->modules, module)) {
    return accErrorInvalidHandle;
  }
  Reply reply{};
  if (accError_t error = send(Op::kModuleFunction, tls_device, {module->id},
                              &reply, name, std::strlen(name));
      error != accSuccess) {
    return error;
  }
  *function = new accFunction_st{reply.value[0], module};
  h->track(h->functions, *function);
  return accSuccess;
}

accError_t accLaunchFunction(accFunction_t function, const void* args,
                             size_t args_size, accStream_t stream) {
  if (args == nullptr && args_size != 0) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target, h); error != accSuccess) {
    return error;
  }
  uint64_t id = 0;
  {
    const std::lock_guard<std::mutex> lock(h->mutex);
    if (h->functions.count(function) == 0) {
      return accErrorInvalidHandle;
    }
    id = function->id;
  }
  return send(Op::kLaunchFunction, target->device, {target->id, id}, nullptr,
              args, args_size);
}

// ------------------------------------------------------------------ events

accError_t accEventCreate(accEvent_t* event) {
  return accEventCreateWithFlags(event, accEventDefault);
}

accError_t accEventCreateWithFlags(accEvent_t* event, unsigned flags) {
  if (event == nullptr || (flags & ~unsigned{accEventDisableTiming}) != 0) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  const bool timing = (flags & accEventDisableTiming) == 0;
  Reply reply{};
  if (accError_t error =
          send(Op::kEventCreate, tls_device, {timing ? 1u : 0u}, &reply);
      error != accSuccess) {
    return error;
  }
  *event = new accEvent_st{reply.value[0], flags};
  h->track(h->events, *event);
  return accSuccess;
}

accError_t accEventDestroy(accEvent_t event) {
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (!h->untrack(h->events, event)) {
    return accErrorInvalidHandle;
  }
  const accError_t error = send(Op::kEventDestroy, tls_device, {event->id});
  delete event;
  return error;
}

accError_t accEventRecord(accEvent_t event, accStream_t stream) {
  Host* h = nullptr;
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target, h); error != accSuccess) {
    return error;
  }
  if (!h->has(h->events, event)) {
    return accErrorInvalidHandle;
  }
  return send(Op::kEventRecord, target->device, {target->id, event->id});
}

accError_t accEventQuery(accEvent_t event) {
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (!h->has(h->events, event)) {
    return accErrorInvalidHandle;
  }
  return send(Op::kEventQuery, tls_device, {event->id});
}

accError_t accEventSynchronize(accEvent_t event) {
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (!h->has(h->events, event)) {
    return accErrorInvalidHandle;
  }
  return send(Op::kEventSynchronize, tls_device, {event->id});
}

accError_t accEventElapsedTime(float* ms, accEvent_t start, accEvent_t end) {
  if (ms == nullptr) {
    return accErrorInvalidValue;
  }
  Host* h = nullptr;
  if (accError_t error = ready(h); error != accSuccess) {
    return error;
  }
  if (!h->has(h->events, start) || !h->has(h->events, end)) {
    return accErrorInvalidHandle;
  }
  Reply reply{};
  if (accError_t error =
          send(Op::kEventElapsed, tls_device, {start->id, end->id}, &reply);
      error != accSuccess) {
    return error;
  }
  *ms = static_cast<float>(static_cast<int64_t>(reply.value[0]) / 1e6);
  return accSuccess;
}

// ------------------------------------------------------------------ graphs
// Optional; this driver has none (accErrorNotSupported), and no stream of
// it ever captures.

accError_t accStreamBeginCapture(accStream_t, accStreamCaptureMode) {
  return accErrorNotSupported;
}
accError_t accStreamEndCapture(accStream_t, accGraph_t* graph) {
  if (graph != nullptr) {
    *graph = nullptr;
  }
  return accErrorNotSupported;
}
accError_t accStreamGetCaptureInfo(accStream_t stream,
                                   accStreamCaptureStatus* status,
                                   unsigned long long* id) {
  if (status == nullptr) {
    return accErrorInvalidValue;
  }
  accStream_t target = nullptr;
  if (accError_t error = resolve(stream, target); error != accSuccess) {
    return error;
  }
  *status = accStreamCaptureStatusNone;
  if (id != nullptr) {
    *id = 0;
  }
  return accSuccess;
}
accError_t accGraphGetNodeCount(accGraph_t, size_t*) {
  return accErrorNotSupported;
}
accError_t accGraphDestroy(accGraph_t) {
  return accErrorNotSupported;
}
accError_t accGraphInstantiate(accGraphExec_t* exec, accGraph_t) {
  if (exec != nullptr) {
    *exec = nullptr;
  }
  return accErrorNotSupported;
}
accError_t accGraphLaunch(accGraphExec_t, accStream_t) {
  return accErrorNotSupported;
}
accError_t accGraphExecDestroy(accGraphExec_t) {
  return accErrorNotSupported;
}

}  // extern "C"
