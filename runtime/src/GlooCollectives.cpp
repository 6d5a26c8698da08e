// The collective interface (accgen/collectives.h) over the Gloo engine
// inside torch: the implementation a backend gets with the emulator.
//
// Note [Collectives over Gloo]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// torch ships Gloo compiled in, but not its headers, so the engine is
// reached through a torch ProcessGroupGloo over the same ranks (the
// bootstrap's host group, made by the backend's Python side). Each
// collective is a kernel on the caller's stream: when the stream reaches
// it, it views the device buffers as CPU tensors in place (zero-copy; the
// kernel's access to those allocations covers Gloo's own threads, which
// read and write them) and runs the Gloo collective to completion. A
// failure (a peer gone, ranks that disagree) becomes the communicator's
// asynchronous error and fails the kernel, as a device-side error would:
// the stream's next synchronization raises it with the collective's
// message, so nothing reads a buffer the collective left unreduced. The
// collectives queued after it fail the same way without moving data, and
// one launched once the group has seen the failure raises at its call.
#include <accgen/collectives.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/StringUtil.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "Internal.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::gloo_collectives {

struct CommState {
  c10::intrusive_ptr<c10d::Backend> gloo;
  // Note [Ranks that disagree]: the signatures travel over a second group,
  // on a stream of their own.
  c10::intrusive_ptr<c10d::Backend> checker;
  accStream_t check_stream = nullptr;
  int rank = 0;
  int size = 0;
  std::mutex mutex;
  accError_t error = accSuccess;
  std::string message;
  bool reported = false;  // handed to the stream's next synchronization

  bool failed() {
    const std::lock_guard<std::mutex> lock(mutex);
    return error != accSuccess;
  }

  void fail(std::string what) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (error == accSuccess) {
      error = accErrorLaunchFailure;
      message = std::move(what);
    }
  }

  CommState() = default;
  CommState(const CommState&) = delete;
  CommState& operator=(const CommState&) = delete;
  ~CommState() {
    if (check_stream != nullptr) {
      (void)accStreamDestroy(check_stream);
    }
  }
};

}  // namespace accgen::gloo_collectives

// The communicator's state is named outside an anonymous namespace: the
// handle type is global.
struct accComm_st {
  // Shared with the kernels still queued, which may outlive the handle.
  std::shared_ptr<accgen::gloo_collectives::CommState> state;
};

namespace {

using accgen::gloo_collectives::CommState;

c10::ScalarType scalarType(accDataType_t type) {
  switch (type) {
    case accInt8:
      return c10::kChar;
    case accUint8:
      return c10::kByte;
    case accInt32:
      return c10::kInt;
    case accInt64:
      return c10::kLong;
    case accFloat16:
      return c10::kHalf;
    case accBFloat16:
      return c10::kBFloat16;
    case accFloat32:
      return c10::kFloat;
    case accFloat64:
      return c10::kDouble;
  }
  return c10::ScalarType::Undefined;
}

bool validType(accDataType_t type) {
  return scalarType(type) != c10::ScalarType::Undefined;
}

c10d::ReduceOp reduceOp(accRedOp_t op) {
  switch (op) {
    case accSum:
      return c10d::ReduceOp::SUM;
    case accProd:
      return c10d::ReduceOp::PRODUCT;
    case accMin:
      return c10d::ReduceOp::MIN;
    case accMax:
      return c10d::ReduceOp::MAX;
    case accAvg:
      return c10d::ReduceOp::AVG;
  }
  return c10d::ReduceOp::UNUSED;
}

bool validOp(accRedOp_t op) {
  return op >= accSum && op <= accAvg;
}

/// `count` elements at `data` as a CPU tensor, in place.
at::Tensor view(const void* data, std::size_t count, accDataType_t type) {
  return at::from_blob(const_cast<void*>(data), {static_cast<int64_t>(count)},
                       at::TensorOptions().dtype(scalarType(type)));
}

// Note [Ranks that disagree]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Gloo aborts the process when a rank receives more bytes than it expects
// (an exception on its transport thread), so ranks that call mismatched
// collectives must find out before any data moves. Each collective first
// all-gathers a fixed-size signature (what, how many elements, which type,
// the reduction or root, and for all-to-all the counts per peer); ranks
// that disagree all raise an error that lists every rank's call, and no
// data moves. A send carries its signature ahead of its data, which the
// receiving rank checks. The signatures go over a second Gloo group on a
// stream of their own, which the collective's stream waits for: back to
// back collectives exchange their signatures while earlier ones move data,
// so the check costs their bandwidth little.
enum class Kind : int64_t {
  AllReduce = 1,
  Broadcast,
  AllGather,
  ReduceScatter,
  AllToAll,
  SendRecv,
};

struct Signature {
  Kind kind;
  int64_t count = 0;
  accDataType_t type = accFloat32;
  int64_t arg = 0;                   // the reduction, the root or the peer
  std::vector<int64_t> send_counts;  // all-to-all: per peer
  std::vector<int64_t> recv_counts;
};

const char* kindName(int64_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::AllReduce:
      return "all_reduce";
    case Kind::Broadcast:
      return "broadcast";
    case Kind::AllGather:
      return "all_gather";
    case Kind::ReduceScatter:
      return "reduce_scatter";
    case Kind::AllToAll:
      return "all_to_all";
    case Kind::SendRecv:
      return "send";
  }
  return "an unknown collective";
}

/// The result of a collective's kernel on a broken communicator: a launch
/// failure, whose message (the communicator's error, once) the stream's
/// next synchronization raises.
accError_t failKernel(CommState& state, const Signature& sig) {
  std::string message;
  {
    const std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.reported) {
      state.reported = true;
      message = state.message;
    }
  }
  if (!message.empty()) {
    accgen::runtime::detail::deferError(
        c10::str(kindName(static_cast<int64_t>(sig.kind)), " on rank ",
                 state.rank, ": ", message));
  }
  return accErrorLaunchFailure;
}

std::string describe(const int64_t* row, int size) {
  std::ostringstream out;
  out << kindName(row[0]);
  if (static_cast<Kind>(row[0]) == Kind::AllToAll) {
    out << " sending [";
    for (int r = 0; r < size; ++r) {
      out << (r ? ", " : "") << row[4 + r];
    }
    out << "] receiving [";
    for (int r = 0; r < size; ++r) {
      out << (r ? ", " : "") << row[4 + size + r];
    }
    out << "] elements";
  } else {
    out << " of " << row[1] << " elements";
  }
  out << " of " << scalarType(static_cast<accDataType_t>(row[2]));
  if (static_cast<Kind>(row[0]) == Kind::Broadcast) {
    out << " from root " << row[3];
  }
  return out.str();
}

void agree(c10d::Backend& gloo, int rank, int size, const Signature& sig) {
  const int64_t width = 4 + 2 * static_cast<int64_t>(size);
  std::vector<int64_t> row(static_cast<std::size_t>(width), 0);
  row[0] = static_cast<int64_t>(sig.kind);
  row[1] = sig.count;
  row[2] = sig.type;
  row[3] = sig.arg;
  std::copy(sig.send_counts.begin(), sig.send_counts.end(), row.begin() + 4);
  std::copy(sig.recv_counts.begin(), sig.recv_counts.end(),
            row.begin() + 4 + size);
  at::Tensor mine = at::from_blob(row.data(), {width}, at::kLong);
  at::Tensor all = at::empty({size * width}, at::kLong);
  gloo._allgather_base(all, mine)->wait();
  const int64_t* rows = all.const_data_ptr<int64_t>();
  bool same = true;
  for (int r = 0; r < size && same; ++r) {
    const int64_t* other = rows + r * width;
    same = std::equal(other, other + 4, row.data());
    if (same && sig.kind == Kind::AllToAll) {
      // What rank r sends to this rank is what this rank receives from r.
      same =
          other[4 + rank] ==
          row[4 + static_cast<std::size_t>(size) + static_cast<std::size_t>(r)];
    }
  }
  if (!same) {
    std::ostringstream message;
    message << "ranks called mismatched collectives:";
    for (int r = 0; r < size; ++r) {
      message << (r ? ";" : "") << " rank " << r << " "
              << describe(rows + r * width, size);
    }
    throw std::runtime_error(message.str());
  }
}

/// A send's signature goes ahead of its data (Note [Ranks that disagree]).
void sendSignature(c10d::Backend& gloo, const Signature& sig) {
  std::vector<int64_t> header{static_cast<int64_t>(Kind::SendRecv), sig.count,
                              sig.type};
  std::vector<at::Tensor> tensors{at::from_blob(header.data(), {3}, at::kLong)};
  gloo.send(tensors, static_cast<int>(sig.arg), 0)->wait();
}

void checkSentSignature(c10d::Backend& gloo, const Signature& sig) {
  std::vector<int64_t> header(3, 0);
  std::vector<at::Tensor> tensors{at::from_blob(header.data(), {3}, at::kLong)};
  gloo.recv(tensors, static_cast<int>(sig.arg), 0)->wait();
  if (header[1] != sig.count || header[2] != sig.type) {
    std::ostringstream message;
    message << "rank " << sig.arg << " sent " << header[1] << " elements of "
            << scalarType(static_cast<accDataType_t>(header[2]))
            << ", this rank receives " << sig.count << " elements of "
            << scalarType(sig.type);
    throw std::runtime_error(message.str());
  }
}

enum class Role { Collective, Send, Recv };

std::size_t bytesOf(std::size_t count, accDataType_t type) {
  return count * c10::elementSize(scalarType(type));
}

// Note [Staged collectives]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Where the host cannot address device memory (Note [Host access] in
// Driver.cpp), Gloo cannot view the device buffers in place. Each buffer of
// a collective is then staged through pinned host memory on the
// collective's stream: the bytes it reads are copied there first, Gloo
// runs over the pinned copies, and the bytes it writes are copied back,
// all in stream order; the pinned memory goes once the stream is past the
// last copy. Only the driver's copies touch device memory, so this serves
// any driver.

/// A device buffer of a collective: its bytes, and whether the collective
/// reads and writes them.
struct Region {
  const void* device;
  std::size_t bytes;
  bool read;
  bool written;
};

/// Where a collective's body finds its buffers: the device buffers
/// themselves, or their pinned copies (Note [Staged collectives]).
class Staged {
 public:
  Staged() = default;
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;
  ~Staged() {
    for (const Copy& copy : copies_) {
      (void)accFreeHost(copy.host);
    }
  }

  /// The pointer the body uses for `device` (a pointer into a region).
  void* operator()(const void* device) const {
    const auto* address = static_cast<const std::byte*>(device);
    for (const Copy& copy : copies_) {
      const auto* base = static_cast<const std::byte*>(copy.region.device);
      if (address >= base && address <= base + copy.region.bytes) {
        return static_cast<std::byte*>(copy.host) + (address - base);
      }
    }
    return const_cast<void*>(device);
  }

  /// Pinned copies of `regions` (one per device buffer), the bytes read
  /// copied in on `stream`.
  accError_t stageIn(std::initializer_list<Region> regions,
                     accStream_t stream) {
    for (const Region& region : regions) {
      if (region.device == nullptr || region.bytes == 0) {
        continue;
      }
      Copy* same = nullptr;
      for (Copy& copy : copies_) {
        if (copy.region.device == region.device) {
          same = &copy;
        }
      }
      if (same != nullptr) {  // in place: one buffer, read and written
        same->region.bytes = std::max(same->region.bytes, region.bytes);
        same->region.read |= region.read;
        same->region.written |= region.written;
      } else {
        copies_.push_back({region, nullptr});
      }
    }
    for (Copy& copy : copies_) {
      if (accError_t e = accMallocHost(&copy.host, copy.region.bytes);
          e != accSuccess) {
        return e;
      }
      if (copy.region.read) {
        if (accError_t e =
                accMemcpyAsync(copy.host, copy.region.device, copy.region.bytes,
                               accMemcpyDeviceToHost, stream);
            e != accSuccess) {
          return e;
        }
      }
    }
    return accSuccess;
  }

  /// The buffers the collective's kernel touches: the pinned copies.
  std::vector<const void*> hostBuffers() const {
    std::vector<const void*> buffers;
    for (const Copy& copy : copies_) {
      buffers.push_back(copy.host);
    }
    return buffers;
  }

  /// Copies the bytes written back to the device, on `stream`.
  accError_t stageOut(accStream_t stream) const {
    for (const Copy& copy : copies_) {
      if (copy.region.written) {
        if (accError_t e = accMemcpyAsync(const_cast<void*>(copy.region.device),
                                          copy.host, copy.region.bytes,
                                          accMemcpyHostToDevice, stream);
            e != accSuccess) {
          return e;
        }
      }
    }
    return accSuccess;
  }

 private:
  struct Copy {
    Region region;
    void* host;
  };
  std::vector<Copy> copies_;
};

using Body = std::function<void(c10d::Backend&, const Staged&)>;

struct Collective {
  std::shared_ptr<CommState> state;
  Role role;
  Signature signature;
  Body body;
  std::shared_ptr<Staged> staged;
};

/// Queues `body` on `stream` with access to `regions`, after the ranks
/// agreed on `signature` (Note [Ranks that disagree]); through pinned
/// copies of the regions where the host cannot address them (Note [Staged
/// collectives]).
accError_t launch(accComm_t comm, accStream_t stream,
                  std::initializer_list<Region> regions, Role role,
                  Signature signature, Body body) {
  if (comm == nullptr) {
    return accErrorInvalidHandle;
  }
  CommState& shared = *comm->state;
  if (role == Role::Collective) {
    // The signature first, on the check stream; the collective's stream
    // waits for it. The check reports a disagreement as the
    // communicator's error, and the collective then does nothing.
    auto check = std::make_unique<Collective>(
        Collective{comm->state, role, signature, {}, nullptr});
    const accError_t queued = accLaunchKernelEx(
        shared.check_stream,
        [](void* data) {
          const std::unique_ptr<Collective> owned(
              static_cast<Collective*>(data));
          CommState& state = *owned->state;
          if (state.failed()) {
            return accSuccess;
          }
          try {
            agree(*state.checker, state.rank, state.size, owned->signature);
          } catch (const c10::Error& error) {
            state.fail(error.what_without_backtrace());
          } catch (const std::exception& error) {
            state.fail(error.what());
          }
          return accSuccess;
        },
        check.get(), nullptr, 0, accLaunchWaitsOutside);
    if (queued != accSuccess) {
      return queued;
    }
    (void)check.release();
    accEvent_t checked = nullptr;
    accError_t ordered =
        accEventCreateWithFlags(&checked, accEventDisableTiming);
    if (ordered == accSuccess) {
      ordered = accEventRecord(checked, shared.check_stream);
      if (ordered == accSuccess) {
        ordered = accStreamWaitEvent(stream, checked, 0);
      }
      (void)accEventDestroy(checked);
    }
    if (ordered != accSuccess) {
      return ordered;
    }
  }
  auto staged = std::make_shared<Staged>();
  std::vector<const void*> touched;
  const bool staging = !::accgen::runtime::hostComputes();
  if (staging) {
    if (accError_t e = staged->stageIn(regions, stream); e != accSuccess) {
      return e;
    }
    touched = staged->hostBuffers();
  } else {
    for (const Region& region : regions) {
      touched.push_back(region.device);
    }
  }
  auto collective = std::make_unique<Collective>(Collective{
      comm->state, role, std::move(signature), std::move(body), staged});
  const accError_t launched = accLaunchKernelEx(
      stream,
      [](void* data) {
        const std::unique_ptr<Collective> owned(static_cast<Collective*>(data));
        CommState& state = *owned->state;
        if (state.failed()) {
          // The communicator broke (here or in the signature check): the
          // collective moves no data, and its stream learns why.
          return failKernel(state, owned->signature);
        }
        try {
          switch (owned->role) {
            case Role::Collective:
              break;  // checked on the check stream
            case Role::Send:
              sendSignature(*state.gloo, owned->signature);
              break;
            case Role::Recv:
              checkSentSignature(*state.gloo, owned->signature);
              break;
          }
          owned->body(*state.gloo, *owned->staged);
        } catch (const c10::Error& error) {
          state.fail(error.what_without_backtrace());
        } catch (const std::exception& error) {
          state.fail(error.what());
        }
        return state.failed() ? failKernel(state, owned->signature)
                              : accSuccess;
      },
      collective.get(), touched.data(), touched.size(),
      // It waits for the other ranks: never on the launching thread.
      accLaunchWaitsOutside);
  if (launched != accSuccess) {
    return launched;
  }
  (void)collective.release();  // the queued kernel owns it now
  if (!staging) {
    return accSuccess;
  }
  if (accError_t e = staged->stageOut(stream); e != accSuccess) {
    return e;
  }
  // The pinned copies go once the stream is past the copies back.
  return accLaunchKernelOwned(
      stream, [](void*) { return accSuccess; },
      new std::shared_ptr<Staged>(std::move(staged)),
      [](void* data) { delete static_cast<std::shared_ptr<Staged>*>(data); },
      nullptr, 0);
}

}  // namespace

namespace {

/// accSend and accRecv: `role` says which (Note [Ranks that disagree]).
accError_t pointToPoint(void* buffer, size_t count, accDataType_t datatype,
                        int peer, accComm_t comm, accStream_t stream,
                        Role role) {
  if (!validType(datatype) || comm == nullptr || peer < 0 ||
      peer >= comm->state->size) {
    return accErrorInvalidValue;
  }
  const Signature signature{
      Kind::SendRecv, static_cast<int64_t>(count), datatype, peer, {}, {}};
  const bool send = role == Role::Send;
  return launch(
      comm, stream, {{buffer, bytesOf(count, datatype), send, !send}}, role,
      signature, [=](c10d::Backend& gloo, const Staged& at) {
        std::vector<at::Tensor> tensors{view(at(buffer), count, datatype)};
        if (role == Role::Send) {
          gloo.send(tensors, peer, 0)->wait();
        } else {
          gloo.recv(tensors, peer, 0)->wait();
        }
      });
}

}  // namespace

extern "C" {

accError_t accCommInitRank(accComm_t* comm, int nranks, int rank, int device,
                           const accCommBootstrap* bootstrap) {
  (void)device;  // Gloo works on host memory of any device
  if (comm == nullptr || bootstrap == nullptr ||
      bootstrap->hostGroup == nullptr || nranks <= 0 || rank < 0 ||
      rank >= nranks) {
    return accErrorInvalidValue;
  }
  void* host = bootstrap->hostGroup(bootstrap->context, 0);
  void* checker = bootstrap->hostGroup(bootstrap->context, 1);
  if (host == nullptr || checker == nullptr) {
    return accErrorInvalidValue;
  }
  try {
    auto state = std::make_shared<CommState>();
    state->gloo = c10::intrusive_ptr<c10d::Backend>::reclaim_copy(
        static_cast<c10d::Backend*>(host));
    state->checker = c10::intrusive_ptr<c10d::Backend>::reclaim_copy(
        static_cast<c10d::Backend*>(checker));
    state->rank = rank;
    state->size = nranks;
    const accError_t created = accStreamCreate(&state->check_stream);
    if (created != accSuccess) {
      return created;
    }
    *comm = new accComm_st{std::move(state)};
  } catch (const std::bad_alloc&) {
    return accErrorMemoryAllocation;
  }
  return accSuccess;
}

accError_t accCommDestroy(accComm_t comm) {
  delete comm;  // queued kernels keep the state until they ran
  return accSuccess;
}

accError_t accCommGetAsyncError(accComm_t comm, accError_t* error) {
  if (comm == nullptr || error == nullptr) {
    return accErrorInvalidValue;
  }
  const std::lock_guard<std::mutex> lock(comm->state->mutex);
  *error = comm->state->error;
  return accSuccess;
}

const char* accCommGetErrorMessage(accComm_t comm) {
  if (comm == nullptr) {
    return "";
  }
  const std::lock_guard<std::mutex> lock(comm->state->mutex);
  return comm->state->message.c_str();
}

accError_t accAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                        accDataType_t datatype, accRedOp_t op, accComm_t comm,
                        accStream_t stream) {
  if (!validType(datatype) || !validOp(op)) {
    return accErrorInvalidValue;
  }
  const Signature signature{
      Kind::AllReduce, static_cast<int64_t>(count), datatype, op, {}, {}};
  const std::size_t bytes = bytesOf(count, datatype);
  return launch(
      comm, stream,
      {{sendbuf, bytes, true, false}, {recvbuf, bytes, false, true}},
      Role::Collective, signature, [=](c10d::Backend& gloo, const Staged& at) {
        std::vector<at::Tensor> tensors{view(at(recvbuf), count, datatype)};
        if (sendbuf != recvbuf) {
          tensors[0].copy_(view(at(sendbuf), count, datatype));
        }
        c10d::AllreduceOptions options;
        options.reduceOp = reduceOp(op);
        gloo.allreduce(tensors, options)->wait();
      });
}

accError_t accBroadcast(const void* sendbuf, void* recvbuf, size_t count,
                        accDataType_t datatype, int root, accComm_t comm,
                        accStream_t stream) {
  if (!validType(datatype) || comm == nullptr || root < 0 ||
      root >= comm->state->size) {
    return accErrorInvalidValue;
  }
  const int rank = comm->state->rank;
  const Signature signature{
      Kind::Broadcast, static_cast<int64_t>(count), datatype, root, {}, {}};
  const std::size_t bytes = bytesOf(count, datatype);
  return launch(
      comm, stream,
      {{rank == root ? sendbuf : nullptr, bytes, true, false},
       {recvbuf, bytes, false, true}},
      Role::Collective, signature, [=](c10d::Backend& gloo, const Staged& at) {
        std::vector<at::Tensor> tensors{view(at(recvbuf), count, datatype)};
        if (rank == root && sendbuf != recvbuf) {
          tensors[0].copy_(view(at(sendbuf), count, datatype));
        }
        c10d::BroadcastOptions options;
        options.rootRank = root;
        gloo.broadcast(tensors, options)->wait();
      });
}

accError_t accAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                        accDataType_t datatype, accComm_t comm,
                        accStream_t stream) {
  if (!validType(datatype) || comm == nullptr) {
    return accErrorInvalidValue;
  }
  const auto size = static_cast<std::size_t>(comm->state->size);
  const Signature signature{
      Kind::AllGather, static_cast<int64_t>(sendcount), datatype, 0, {}, {}};
  return launch(
      comm, stream,
      {{sendbuf, bytesOf(sendcount, datatype), true, false},
       {recvbuf, bytesOf(sendcount * size, datatype), false, true}},
      Role::Collective, signature, [=](c10d::Backend& gloo, const Staged& at) {
        at::Tensor output = view(at(recvbuf), sendcount * size, datatype);
        at::Tensor input = view(at(sendbuf), sendcount, datatype);
        gloo._allgather_base(output, input)->wait();
      });
}

accError_t accReduceScatter(const void* sendbuf, void* recvbuf,
                            size_t recvcount, accDataType_t datatype,
                            accRedOp_t op, accComm_t comm, accStream_t stream) {
  if (!validType(datatype) || !validOp(op) || comm == nullptr) {
    return accErrorInvalidValue;
  }
  const auto size = static_cast<std::size_t>(comm->state->size);
  const Signature signature{Kind::ReduceScatter,
                            static_cast<int64_t>(recvcount),
                            datatype,
                            op,
                            {},
                            {}};
  return launch(
      comm, stream,
      {{sendbuf, bytesOf(recvcount * size, datatype), true, false},
       {recvbuf, bytesOf(recvcount, datatype), false, true}},
      Role::Collective, signature, [=](c10d::Backend& gloo, const Staged& at) {
        at::Tensor output = view(at(recvbuf), recvcount, datatype);
        at::Tensor input = view(at(sendbuf), recvcount * size, datatype);
        c10d::ReduceScatterOptions options;
        options.reduceOp = reduceOp(op);
        gloo._reduce_scatter_base(output, input, options)->wait();
      });
}

accError_t accAllToAllv(const void* sendbuf, const size_t* sendcounts,
                        const size_t* sdispls, void* recvbuf,
                        const size_t* recvcounts, const size_t* rdispls,
                        accDataType_t datatype, accComm_t comm,
                        accStream_t stream) {
  if (!validType(datatype) || comm == nullptr || sendcounts == nullptr ||
      sdispls == nullptr || recvcounts == nullptr || rdispls == nullptr) {
    return accErrorInvalidValue;
  }
  const auto size = static_cast<std::size_t>(comm->state->size);
  // Gloo takes packed chunks: copy the layout now, the caller's arrays
  // need not outlive the call.
  std::vector<std::size_t> layout;
  for (const std::size_t* part : {sendcounts, sdispls, recvcounts, rdispls}) {
    layout.insert(layout.end(), part, part + size);
  }
  Signature signature{Kind::AllToAll, 0, datatype, 0, {}, {}};
  signature.send_counts.assign(sendcounts, sendcounts + size);
  signature.recv_counts.assign(recvcounts, recvcounts + size);
  // Each buffer's extent: its last chunk's end.
  std::size_t send_end = 0;
  std::size_t recv_end = 0;
  for (std::size_t r = 0; r < size; ++r) {
    send_end = std::max(send_end, sdispls[r] + sendcounts[r]);
    recv_end = std::max(recv_end, rdispls[r] + recvcounts[r]);
  }
  return launch(
      comm, stream,
      {{sendbuf, bytesOf(send_end, datatype), true, false},
       {recvbuf, bytesOf(recv_end, datatype), false, true}},
      Role::Collective, std::move(signature),
      [=](c10d::Backend& gloo, const Staged& at) {
        const auto chunks = [&](const void* data, std::size_t counts,
                                std::size_t displs,
                                std::vector<int64_t>& splits) {
          std::vector<at::Tensor> parts;
          for (std::size_t r = 0; r < size; ++r) {
            const std::size_t count = layout[counts * size + r];
            splits.push_back(static_cast<int64_t>(count));
            const auto* base = static_cast<const std::byte*>(data) +
                               layout[displs * size + r] *
                                   c10::elementSize(scalarType(datatype));
            parts.push_back(view(base, count, datatype));
          }
          return parts;
        };
        // Chunks that follow one another from the start of the buffer are
        // already what Gloo takes: one view of the buffer, no packing.
        const auto packed = [&](std::size_t counts, std::size_t displs) {
          std::size_t next = 0;
          for (std::size_t r = 0; r < size; ++r) {
            if (layout[displs * size + r] != next) return false;
            next += layout[counts * size + r];
          }
          return true;
        };
        const auto whole = [&](const void* data, std::size_t counts) {
          std::size_t total = 0;
          for (std::size_t r = 0; r < size; ++r) {
            total += layout[counts * size + r];
          }
          return view(data, total, datatype);
        };
        std::vector<int64_t> send_splits;
        std::vector<int64_t> recv_splits;
        const std::vector<at::Tensor> send_parts =
            chunks(at(sendbuf), 0, 1, send_splits);
        const std::vector<at::Tensor> recv_parts =
            chunks(at(recvbuf), 2, 3, recv_splits);
        const bool recv_packed = packed(2, 3);
        at::Tensor input =
            packed(0, 1) ? whole(at(sendbuf), 0) : at::cat(send_parts);
        at::Tensor output =
            recv_packed ? whole(at(recvbuf), 2) : at::cat(recv_parts);
        // alltoall_base may move from its split arguments: give it copies.
        std::vector<int64_t> output_splits = recv_splits;
        std::vector<int64_t> input_splits = send_splits;
        gloo.alltoall_base(output, input, output_splits, input_splits)->wait();
        if (recv_packed) return;
        int64_t offset = 0;
        for (std::size_t r = 0; r < size; ++r) {
          recv_parts[r].copy_(output.narrow(0, offset, recv_splits[r]));
          offset += recv_splits[r];
        }
      });
}

accError_t accSend(const void* sendbuf, size_t count, accDataType_t datatype,
                   int peer, accComm_t comm, accStream_t stream) {
  return pointToPoint(const_cast<void*>(sendbuf), count, datatype, peer, comm,
                      stream, Role::Send);
}

accError_t accRecv(void* recvbuf, size_t count, accDataType_t datatype,
                   int peer, accComm_t comm, accStream_t stream) {
  return pointToPoint(recvbuf, count, datatype, peer, comm, stream, Role::Recv);
}

}  // extern "C"
