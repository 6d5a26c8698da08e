// A collective library for a single rank, over the driver interface alone:
// the smallest implementation of accgen/collectives.h a vendor could ship.
// tests/python/test_distributed.py builds the init backend with it in place
// of the runtime's Gloo implementation (-DACCGEN_COLLECTIVES_TARGET) and
// trains through torch.distributed with it, which shows the swap point: the
// backend's c10d process group and everything above it are unchanged.
#include <accgen/collectives.h>

#include <cstring>
#include <new>
#include <string>

struct accComm_st {
  std::string unique_id;
};

namespace {

std::size_t elementSize(accDataType_t type) {
  switch (type) {
    case accInt8:
    case accUint8:
      return 1;
    case accFloat16:
    case accBFloat16:
      return 2;
    case accInt32:
    case accFloat32:
      return 4;
    case accInt64:
    case accFloat64:
      return 8;
  }
  return 0;
}

// With one rank, every collective's result is its own input: a copy on the
// stream (nothing when in place).
accError_t copy(void* dst, const void* src, std::size_t count,
                accDataType_t type, accComm_t comm, accStream_t stream) {
  const std::size_t size = elementSize(type);
  if (comm == nullptr || size == 0) {
    return accErrorInvalidValue;
  }
  if (dst == src || count == 0) {
    return accSuccess;
  }
  return accMemcpyAsync(dst, src, count * size, accMemcpyDeviceToDevice,
                        stream);
}

}  // namespace

extern "C" {

accError_t accCommInitRank(accComm_t* comm, int nranks, int rank, int device,
                           const accCommBootstrap* bootstrap) {
  (void)device;
  if (comm == nullptr || bootstrap == nullptr || nranks != 1 || rank != 0) {
    return accErrorInvalidValue;
  }
  // As a real library does: rank 0 publishes the communicator's unique id
  // in the group's store, and every rank reads it from there.
  static const char kId[] = "self-collectives";
  accError_t error =
      bootstrap->set(bootstrap->context, "unique_id", kId, sizeof kId - 1);
  if (error != accSuccess) {
    return error;
  }
  char id[64];
  std::size_t length = sizeof id;
  error = bootstrap->get(bootstrap->context, "unique_id", id, &length);
  if (error != accSuccess) {
    return error;
  }
  if (length != sizeof kId - 1 || std::memcmp(id, kId, length) != 0) {
    return accErrorInvalidValue;
  }
  *comm = new (std::nothrow) accComm_st{std::string(id, length)};
  return *comm != nullptr ? accSuccess : accErrorMemoryAllocation;
}

accError_t accCommDestroy(accComm_t comm) {
  delete comm;
  return accSuccess;
}

accError_t accCommGetAsyncError(accComm_t comm, accError_t* error) {
  if (comm == nullptr || error == nullptr) {
    return accErrorInvalidValue;
  }
  *error = accSuccess;
  return accSuccess;
}

const char* accCommGetErrorMessage(accComm_t comm) {
  (void)comm;
  return "";
}

accError_t accAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                        accDataType_t datatype, accRedOp_t op, accComm_t comm,
                        accStream_t stream) {
  if (op < accSum || op > accAvg) {
    return accErrorInvalidValue;
  }
  return copy(recvbuf, sendbuf, count, datatype, comm, stream);
}

accError_t accBroadcast(const void* sendbuf, void* recvbuf, size_t count,
                        accDataType_t datatype, int root, accComm_t comm,
                        accStream_t stream) {
  if (root != 0) {
    return accErrorInvalidValue;
  }
  return copy(recvbuf, sendbuf, count, datatype, comm, stream);
}

accError_t accAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                        accDataType_t datatype, accComm_t comm,
                        accStream_t stream) {
  return copy(recvbuf, sendbuf, sendcount, datatype, comm, stream);
}

accError_t accReduceScatter(const void* sendbuf, void* recvbuf,
                            size_t recvcount, accDataType_t datatype,
                            accRedOp_t op, accComm_t comm, accStream_t stream) {
  if (op < accSum || op > accAvg) {
    return accErrorInvalidValue;
  }
  return copy(recvbuf, sendbuf, recvcount, datatype, comm, stream);
}

accError_t accAllToAllv(const void* sendbuf, const size_t* sendcounts,
                        const size_t* sdispls, void* recvbuf,
                        const size_t* recvcounts, const size_t* rdispls,
                        accDataType_t datatype, accComm_t comm,
                        accStream_t stream) {
  if (sendcounts == nullptr || sdispls == nullptr || recvcounts == nullptr ||
      rdispls == nullptr || sendcounts[0] != recvcounts[0]) {
    return accErrorInvalidValue;
  }
  const std::size_t size = elementSize(datatype);
  return copy(static_cast<char*>(recvbuf) + rdispls[0] * size,
              static_cast<const char*>(sendbuf) + sdispls[0] * size,
              sendcounts[0], datatype, comm, stream);
}

accError_t accSend(const void* sendbuf, size_t count, accDataType_t datatype,
                   int peer, accComm_t comm, accStream_t stream) {
  (void)sendbuf, (void)count, (void)datatype, (void)peer, (void)comm,
      (void)stream;
  return accErrorInvalidValue;  // there is no other rank
}

accError_t accRecv(void* recvbuf, size_t count, accDataType_t datatype,
                   int peer, accComm_t comm, accStream_t stream) {
  (void)recvbuf, (void)count, (void)datatype, (void)peer, (void)comm,
      (void)stream;
  return accErrorInvalidValue;
}

}  // extern "C"
