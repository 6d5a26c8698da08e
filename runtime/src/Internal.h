// Pieces the runtime's translation units share with Registration.cpp, which
// hands them to c10 once the backend owns the device type (Note [One
// PrivateUse1 backend per process] in accgen/runtime/Registration.h).
#pragma once

#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/Storage.h>
#include <c10/core/Stream.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/typeid.h>

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

/// Where the new results of a CPU kernel running as a device kernel go
/// (Note [Kernel results in device memory] in Allocator.cpp): the device
/// and its stream, taken on the thread that launches the kernel, since the
/// kernel may run on the stream's worker.
struct KernelResultsPlace {
  c10::DeviceIndex device;
  c10::StreamId stream;
  /// `device` and its current stream on the calling thread.
  static KernelResultsPlace of(c10::DeviceIndex device);
};

/// While it lives, the CPU allocator of the process serves this thread from
/// the caching allocator of `place` (null: from CPU memory): it brackets a
/// CPU kernel running as a device kernel, and restores the place before it.
class KernelAllocations {
 public:
  explicit KernelAllocations(const KernelResultsPlace* place);
  ~KernelAllocations();
  KernelAllocations(const KernelAllocations&) = delete;
  KernelAllocations& operator=(const KernelAllocations&) = delete;

 private:
  const KernelResultsPlace* previous_;
};

/// Puts the allocator KernelAllocations switches in front of the CPU
/// allocator (Registration.cpp, once).
void installKernelResultsAllocator();

/// A device storage on `device` owning the device block that `host` (a CPU
/// storage a kernel allocated under KernelAllocations) holds, which then
/// keeps only the address; an empty storage when `host` holds no block.
c10::Storage takeDeviceBlock(c10::StorageImpl& host, c10::Device device);

/// A tensor over `storage` with the given dispatch keys (to which the
/// TensorImpl adds the autograd keys of the backend), dtype and geometry
/// (emulate/Aliases.cpp).
at::Tensor tensorOver(c10::Storage storage, c10::DispatchKeySet keys,
                      caffe2::TypeMeta dtype, c10::IntArrayRef sizes,
                      c10::IntArrayRef strides, int64_t storage_offset);
at::Tensor tensorOver(c10::Storage storage, c10::DispatchKey key,
                      caffe2::TypeMeta dtype, c10::IntArrayRef sizes,
                      c10::IntArrayRef strides, int64_t storage_offset);

}  // namespace accgen::runtime::detail
