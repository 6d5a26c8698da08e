/*
 * The accgen collective interface.
 *
 * The backend's torch.distributed process group (runtime/src/Distributed.cpp)
 * moves device memory between processes through this C interface and nothing
 * else: communicators, and collectives over device buffers queued on a
 * stream, in the spirit of NCCL and its vendor counterparts (HCCL, CNCL,
 * MCCL). It sits beside the driver interface (accgen/driver.h), not inside
 * it: a vendor's collective library is a product of its own with a
 * bootstrap of its own (ranks, a unique id exchanged through a key-value
 * store), and a driver stays usable without it.
 *
 * accgen ships one implementation, over the Gloo engine inside torch
 * (runtime/src/GlooCollectives.cpp), used with the emulator. A vendor
 * implements these functions over their collective library and names it in
 * accgen_add_backend(... COLLECTIVES <target>); nothing else changes.
 *
 * Contract for every function:
 *  - it returns an accError_t and never throws, aborts or exits;
 *  - a collective is queued on `stream` after the work already there and
 *    returns at once; it reads its send buffer and writes its receive buffer
 *    when it runs, and the buffers are device memory of the communicator's
 *    process, laid out contiguously;
 *  - every rank of a communicator issues the same collectives in the same
 *    order, with matching counts and types;
 *  - a collective that fails once it runs (a peer that died, a timeout, a
 *    mismatch between ranks) fails on its stream as a kernel does
 *    (accErrorLaunchFailure, raised by the stream's next synchronization),
 *    so that nothing reads its buffers as if it had run; it also becomes
 *    the communicator's asynchronous error (accCommGetAsyncError), the
 *    collectives queued after it fail the same way without moving data,
 *    the communicator is unusable from then on, and the caller destroys
 *    it.
 *
 * docs/distributed.md documents the interface in prose.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <accgen/driver.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct accComm_st* accComm_t;

/* Element types of collective buffers. */
typedef enum accDataType {
  accInt8 = 0,
  accUint8 = 1,
  accInt32 = 2,
  accInt64 = 3,
  accFloat16 = 4,
  accBFloat16 = 5,
  accFloat32 = 6,
  accFloat64 = 7,
} accDataType_t;

/* Reductions. accAvg divides the sum by the number of ranks. */
typedef enum accRedOp {
  accSum = 0,
  accProd = 1,
  accMin = 2,
  accMax = 3,
  accAvg = 4,
} accRedOp_t;

/* What a communicator is created from, given by the caller. The store is
 * shared by the ranks of the communicator and private to it: rank 0 of a
 * collective library typically sets its unique id there and the others get
 * it. */
/* --8<-- [start:bootstrap] */
typedef struct accCommBootstrap {
  void* context; /* passed back to each callback */
  /* Stores `size` bytes under `key`. */
  accError_t (*set)(void* context, const char* key, const void* data,
                    size_t size);
  /* Waits until `key` is set (up to `timeoutMs`), then copies its value into
   * `data`: `*size` is the capacity on entry and the value's length on
   * return; a value longer than the capacity is accErrorInvalidValue. */
  accError_t (*get)(void* context, const char* key, void* data, size_t* size);
  /* Host process group number `index` (0, 1, ...) over the same ranks, as
   * an opaque handle: a torch Gloo group (a c10d::Backend*) of the caller's,
   * created on the first call for that index and owned by the caller. Only
   * an implementation built on torch uses it; NULL if the caller has
   * none. */
  void* (*hostGroup)(void* context, int index);
  int64_t timeoutMs; /* how long a collective may wait for its peers */
} accCommBootstrap;
/* --8<-- [end:bootstrap] */

/* --8<-- [start:collectives] */
/* Creates this rank's communicator among `nranks` ranks for `device`.
 * Collective: every rank calls it with its own `rank` and the same
 * `nranks`. */
accError_t accCommInitRank(accComm_t* comm, int nranks, int rank, int device,
                           const accCommBootstrap* bootstrap);
/* Destroys `comm` once the collectives queued on it completed. */
accError_t accCommDestroy(accComm_t comm);
/* accSuccess, or the error of the first collective of `comm` that failed. */
accError_t accCommGetAsyncError(accComm_t comm, accError_t* error);
/* What that failure was, in words ("" while there is none; never NULL). The
 * text stays valid until accCommDestroy. */
const char* accCommGetErrorMessage(accComm_t comm);

/* recvbuf[i] = op over ranks of sendbuf[i], for i < count, on every rank.
 * sendbuf == recvbuf is in place. */
accError_t accAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                        accDataType_t datatype, accRedOp_t op, accComm_t comm,
                        accStream_t stream);
/* recvbuf = the `root` rank's sendbuf, on every rank (sendbuf is read on
 * `root` only; sendbuf == recvbuf is in place). */
accError_t accBroadcast(const void* sendbuf, void* recvbuf, size_t count,
                        accDataType_t datatype, int root, accComm_t comm,
                        accStream_t stream);
/* recvbuf[r * sendcount + i] = sendbuf[i] of rank r. */
accError_t accAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                        accDataType_t datatype, accComm_t comm,
                        accStream_t stream);
/* recvbuf[i] = op over ranks of sendbuf[rank * recvcount + i]. */
accError_t accReduceScatter(const void* sendbuf, void* recvbuf,
                            size_t recvcount, accDataType_t datatype,
                            accRedOp_t op, accComm_t comm, accStream_t stream);
/* Sends sendcounts[r] elements at sendbuf + sdispls[r] to rank r and
 * receives recvcounts[r] elements from it at recvbuf + rdispls[r] (counts
 * and displacements in elements; each array has one entry per rank). */
accError_t accAllToAllv(const void* sendbuf, const size_t* sendcounts,
                        const size_t* sdispls, void* recvbuf,
                        const size_t* recvcounts, const size_t* rdispls,
                        accDataType_t datatype, accComm_t comm,
                        accStream_t stream);
/* Point to point: matched in order between each pair of ranks. */
accError_t accSend(const void* sendbuf, size_t count, accDataType_t datatype,
                   int peer, accComm_t comm, accStream_t stream);
accError_t accRecv(void* recvbuf, size_t count, accDataType_t datatype,
                   int peer, accComm_t comm, accStream_t stream);
/* --8<-- [end:collectives] */

#ifdef __cplusplus
} /* extern "C" */
#endif
