// Pieces the runtime's translation units share with Registration.cpp, which
// hands them to c10 once the backend owns the device type (Note [One
// PrivateUse1 backend per process] in accgen/runtime/Registration.h).
#pragma once

#include <string>
#include <vector>

namespace c10 {
class OperatorHandle;
struct IValue;
}  // namespace c10

namespace c10::impl {
struct DeviceGuardImplInterface;
}  // namespace c10::impl

namespace at {
class Tensor;
struct PrivateUse1HooksInterface;
}  // namespace at

namespace accgen::runtime::detail {

/// The device guard implementation (DeviceGuard.cpp).
const c10::impl::DeviceGuardImplInterface* guardImpl();

/// The PrivateUse1 hooks (Hooks.cpp).
at::PrivateUse1HooksInterface* hooks();

/// Registers the save/load functions of the tensors' backend metadata
/// (Serialization.cpp).
void registerSerialization();

/// Registers the device's profiler stubs and Kineto activity profiler
/// (Profiler.cpp, Note [Profiling device time]).
void registerProfiler();

/// at::GraphImplRegistry: torch.accelerator.Graph on the device (Graph.cpp).
void registerGraphs();

/// The messages of errors that operators queued on the device raised since
/// the last call, one per line (Note [Queued operators] in
/// src/emulate/Launch.cpp); empty if none.
std::string takeDeferredErrors();

/// Keeps the message of a kernel that failed on a stream, for the next
/// synchronization that reports the failure (as takeDeferredErrors gives).
void deferError(std::string message);

/// Runs the boxed call of `op` on the host: its device tensor arguments
/// copied to the host, its CPU kernel, written arguments and new results
/// copied back (Note [Sparse tensors on the device] in Sparse.cpp). `kind`
/// names the tensors in its errors ("sparse", "quantized").
void runOnHost(const c10::OperatorHandle& op, std::vector<c10::IValue>* stack,
               const char* kind);

/// The device's kernel of aten::_has_compatible_shallow_copy_type, for its
/// dense, sparse and sparse compressed tensors (Note [Parameters keep their
/// identity across .to()] in Builtin.cpp).
bool hasCompatibleShallowCopyType(const at::Tensor& self,
                                  const at::Tensor& from);

}  // namespace accgen::runtime::detail
