// torch.distributed on the device: the backend's c10d process group
// (Distributed.cpp), which runs every collective through the collective
// interface (accgen/collectives.h) on a communication stream of the device.
// The Python side registers it with torch.distributed.Backend as the
// device's default (_device.py).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Backend;
class Store;
}  // namespace c10d

namespace accgen::runtime {

/// The name the backend registers with torch.distributed: "<device>ccl".
std::string distributedBackendName();

/// Makes host process group number `index` over the same ranks, which the
/// collective interface may ask for (accCommBootstrap::hostGroup).
using HostGroupFactory =
    std::function<c10::intrusive_ptr<c10d::Backend>(int index)>;

/// The c10d backend of this rank among `size` ranks, for the calling
/// thread's current device. `store` is private to the group. Collective:
/// every rank of the group calls it.
c10::intrusive_ptr<c10d::Backend> makeDistributedBackend(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size,
    std::chrono::milliseconds timeout, HostGroupFactory host_group);

// Note [Collectives at exit]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The device module calls drainCollectives when the interpreter begins to
// exit, so that no completion runs Python code (a callback, the release of
// a tensor's Python object) while the interpreter finalizes, which ends the
// thread that tries.

/// Waits until every collective of every group of the process completed
/// and its future's callbacks ran (Note [Collectives at exit]).
void drainCollectives();

/// Whether any group has a collective whose completion is still to run.
bool collectivesPending();

}  // namespace accgen::runtime
