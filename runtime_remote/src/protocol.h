// The wire protocol between the remote driver (client.cpp, in the host
// process) and its device process (device_main.cpp): fixed-size requests
// and replies over Unix stream sockets, each followed by a payload of the
// size it states. One connection per host thread, so that a thread waiting
// for its device work never holds up another; file descriptors (the
// connections themselves, pinned host memory) travel as SCM_RIGHTS
// ancillary data.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace accgen::remote {

enum class Op : uint32_t {
  kMalloc,             // device, size -> pointer
  kFree,               // pointer
  kMemGetInfo,         // device -> free, total
  kPointerInfo,        // pointer -> device, base, size (error if unknown)
  kCopyToDevice,       // stream, dst, count + payload (pageable source)
  kCopyFromPinned,     // stream, dst, pinned src, count
  kCopyToHost,         // stream, src, count -> payload (pageable destination)
  kCopyToPinned,       // stream, pinned dst, src, count
  kCopyOnDevice,       // stream, dst, src, count
  kMemset,             // stream, dst, value, count
  kStreamCreate,       // device, priority -> stream id
  kStreamDestroy,      // stream
  kStreamQuery,        // stream -> its sticky error once idle, or not ready
  kStreamSynchronize,  // stream -> its sticky error, taken
  kStreamDrain,        // stream: waits, leaves the sticky error in place
  kStreamSetError,     // stream, error
  kStreamWaitEvent,    // stream, event
  kDeviceSynchronize,  // device -> the first sticky error of its streams
  kEventCreate,        // timing -> event id
  kEventDestroy,       // event
  kEventRecord,        // event, stream
  kEventQuery,         // event
  kEventSynchronize,   // event
  kEventElapsed,       // start, end -> nanoseconds
  kPinnedRegister,     // host address, size + the memory's fd
  kPinnedUnregister,   // host address
  kModuleLoad,         // payload: path -> module id
  kModuleUnload,       // module
  kModuleFunction,     // module + payload: name -> function id
  kLaunchFunction,     // stream, function + payload: argument block
};

// The device process's first byte on the lifeline, once it has tried to
// map its devices' windows (Note [Where device windows go], client.cpp).
constexpr char kDeviceReady = 'R';
constexpr char kDeviceCollided = 'C';

struct Request {
  Op op;
  int32_t device;
  uint64_t arg[5];
  uint64_t payload;  // bytes that follow
};

struct Reply {
  int32_t error;  // accError_t
  uint32_t unused;
  uint64_t value[3];
  uint64_t payload;  // bytes that follow
};

/// The ids of the default streams: device d's is d + 1. Created streams
/// and events get ids above kFirstCreatedId.
inline constexpr uint64_t kFirstCreatedId = 1u << 20;

/// Device allocations are aligned to this many bytes.
inline constexpr uint64_t kDeviceAlignment = 256;

/// Writes all of `size` bytes; false once the peer is gone.
inline bool writeAll(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Reads all of `size` bytes; false at end of stream or on error.
inline bool readAll(int fd, void* data, size_t size) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, bytes, size, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Sends `size` bytes (at least one) with the file descriptor `passed`.
inline bool sendWithFd(int fd, const void* data, size_t size, int passed) {
  iovec io{const_cast<void*>(data), size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &passed, sizeof(int));
  ssize_t n = 0;
  do {
    n = ::sendmsg(fd, &message, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    return false;
  }
  return static_cast<size_t>(n) == size ||
         writeAll(fd, static_cast<const char*>(data) + n,
                  size - static_cast<size_t>(n));
}

/// Reads `size` bytes and the file descriptor sent with them, if any (else
/// *received is -1); false at end of stream or on error.
inline bool readWithFd(int fd, void* data, size_t size, int* received) {
  *received = -1;
  iovec io{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  ssize_t n = 0;
  do {
    n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    return false;
  }
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
      std::memcpy(received, CMSG_DATA(header), sizeof(int));
    }
  }
  return static_cast<size_t>(n) == size ||
         readAll(fd, static_cast<char*>(data) + n,
                 size - static_cast<size_t>(n));
}

}  // namespace accgen::remote
