// The device runtime as the rest of the backend sees it: devices, streams,
// the device and pinned-host allocators and the default generators. The
// c10 interfaces (DeviceGuardImplInterface, DeviceAllocator, HostAllocator,
// PrivateUse1HooksInterface) are implemented in the .cpp files beside this
// header and registered with PyTorch when the backend's library is loaded
// (Registration.h); kernels and bindings use these functions instead of the
// driver's raw handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <accgen/driver.h>

#include "accgen/runtime/Config.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

namespace c10 {
class DataPtr;
class OperatorHandle;
struct IValue;
struct Allocator;
struct DeviceAllocator;
struct StorageImpl;
}  // namespace c10

namespace at {
struct Generator;
struct HostAllocator;
}  // namespace at

namespace torch::jit {
// As ATen/core/stack.h has it, without the headers it brings.
using Stack = std::vector<c10::IValue>;
}  // namespace torch::jit

namespace accgen::runtime {

/// The dispatch key and device type the backend registers under.
constexpr c10::DeviceType kDeviceType = c10::DeviceType::PrivateUse1;

// ----------------------------------------------------------------- devices

/// Hands the spec defaults to the driver, once, before its first use.
/// Never throws; a driver that was already in use keeps its settings.
void initDriver() noexcept;

/// Number of devices; 0 when the driver fails. Never throws.
c10::DeviceIndex deviceCount() noexcept;

/// The calling thread's current device.
c10::DeviceIndex currentDevice();

/// Makes `device` current for the calling thread; an index outside
/// [0, deviceCount()) is a c10::Error naming the valid range.
void setDevice(c10::DeviceIndex device);

/// setDevice() returning the previous current device.
c10::DeviceIndex exchangeDevice(c10::DeviceIndex device);

/// Throws a c10::Error unless 0 <= device < deviceCount().
void checkDeviceIndex(c10::DeviceIndex device);

/// `device`, or the current device when it is negative.
c10::DeviceIndex resolveDevice(c10::DeviceIndex device);

// ----------------------------------------------------------------- streams

/// The driver handle behind a c10::Stream of this backend.
accStream_t nativeStream(const c10::Stream& stream);

/// The calling thread's current stream on `device` (-1: current device).
c10::Stream getCurrentStream(c10::DeviceIndex device = -1);

/// The driver's default stream of `device` (-1: current device).
c10::Stream getDefaultStream(c10::DeviceIndex device = -1);

/// A stream from the device's pools, round-robin; priority < 0 picks the
/// high-priority pool (lower numbers are higher priorities, as in CUDA).
c10::Stream getStreamFromPool(c10::DeviceIndex device, int priority = 0);

/// Makes `stream` current on its device for the calling thread; returns the
/// stream that was current there.
c10::Stream exchangeCurrentStream(const c10::Stream& stream);

/// The driver's priority range: {least, greatest}; greatest <= least.
std::pair<int, int> streamPriorityRange();

/// nativeStream(getCurrentStream(device)).
accStream_t currentNativeStream(c10::DeviceIndex device = -1);

/// `t`, for a launch that owns its operands (a TensorIterator moved into a
/// launchOwning kernel): a tensor over the same memory, with the same
/// geometry and version counter, that holds neither Python's object nor,
/// for a device tensor, the memory. A second C++ reference to a tensor only
/// its Python object holds makes torch keep that object alive, which takes
/// the GIL when the reference is made and again when it goes
/// (c10::intrusive_ptr's 1-to-2 and 2-to-1 refcount transitions on a
/// TensorImpl with a PyObject): about 1,100 instructions and two trips
/// through the GIL per operand. And as on CUDA, a queued kernel does not
/// keep device memory allocated: a tensor freed before its kernel ran
/// leaves memory_allocated() at once, and its block goes back to the
/// caching allocator for its stream, which runs the kernel before any later
/// work that reuses the block. A CPU tensor (a Python number the kernel
/// reads from host memory) is held, as the kernel reads it when it runs.
/// Not for a tensor the kernel may still resize, as its memory cannot
/// grow: an out= result goes to it once sized (by an iterator that borrowed
/// it first, say).
at::Tensor ownedByLaunch(const at::Tensor& t);

// -------------------------------------------------------------- allocators

/// The caching device allocator registered for the device type.
c10::DeviceAllocator* getDeviceAllocator();

/// getDeviceAllocator() as the plain c10::Allocator that tensor factories
/// take (no need for the heavier CachingDeviceAllocator.h).
c10::Allocator* getTensorAllocator();

/// A new uninitialised tensor on `device` (-1: the current device) with the
/// given sizes and strides: what empty_strided on the device does, without
/// the dispatcher (compiled graphs allocate their buffers through it).
at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        c10::ScalarType dtype, c10::DeviceIndex device = -1);

/// Marks memory of `data_ptr` as used by work on `stream` as well, so the
/// allocator does not reuse it before that work completed.
void recordStream(const c10::DataPtr& data_ptr, const c10::Stream& stream);

/// Note [Graph memory pools] (Allocator.cpp): allocations of the driver's
/// capture `capture_id` on `device` come from `pool`, which the capture
/// holds, until endAllocateToPool; releasePool lets go of a hold.
void beginAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t pool,
                         unsigned long long capture_id);
void endAllocateToPool(c10::DeviceIndex device, unsigned long long capture_id);
void releasePool(c10::DeviceIndex device, c10::MempoolId_t pool);

/// Note [Host access] (Driver.cpp): whether CPU code may run on device
/// memory through host aliases, which is what the driver says of device 0
/// (accDevAttrHostAddressable). One relaxed load after the first call.
bool hostComputes() noexcept;

/// Raises an error naming `what` (CPU code the backend would run over
/// device memory) where hostComputes() is false.
void requireHostAccess(const char* what);

/// Raises, where hostComputes() is false, an error naming every entry of
/// the spec that would run CPU code over device memory (Config.h
/// kNeedsHostAccess, and kNeedsHostCopies and the emulate fallback without
/// features.host_copies). The device's initialization (Hooks::init) runs
/// it, so a backend that cannot run on its driver says so, in full, at its
/// first device tensor rather than at its first such operator.
void refuseHostCode();

/// What runs instead of CPU code on host aliases where hostComputes() is
/// false: `op` through the CPU fallback, copying its arguments, when the
/// backend enables features.host_copies; otherwise an error naming `op`
/// and what to do.
void runWithoutHostAccess(const c10::OperatorHandle& op,
                          torch::jit::Stack* stack);

/// The device function `name` of the backend's device module (its
/// DEVICE_SOURCES, lib<core>_device.so beside the core library), loaded on
/// first use. Raises if the backend has no device module or the module no
/// such function.
accFunction_t deviceFunction(const char* name);

/// Launches the device function `name` on the current stream of the
/// current device with the `size` bytes of its argument block, and counts
/// the launch (deviceFunctionCounts).
void launchDeviceFunction(const char* name, const void* args, std::size_t size);

/// launchDeviceFunction with a typed argument block, laid out as the
/// device code reads it.
template <class Args>
void launchDeviceFunction(const char* name, const Args& args) {
  static_assert(std::is_trivially_copyable_v<Args>,
                "an argument block is copied as bytes");
  launchDeviceFunction(name, &args, sizeof(args));
}

/// How often each device function was launched in this process, by name:
/// with fallbackCounts(), where each operator ran.
std::vector<std::pair<std::string, int64_t>> deviceFunctionCounts();

/// accMemcpyAsync, counting the bytes it moves between the host and the
/// device (transferBytes): every such copy of the runtime goes through it.
accError_t copyAsync(void* dst, const void* src, std::size_t count,
                     accMemcpyKind kind, accStream_t stream);

/// The bytes copied from the host to the device and back, in this process
/// (copyAsync): with fallbackCounts(), what an operator that runs on the
/// host costs in copies.
struct TransferBytes {
  int64_t host_to_device = 0;
  int64_t device_to_host = 0;
};
TransferBytes transferBytes() noexcept;

/// Whether a graph capture is in progress anywhere (Graph.cpp): one relaxed
/// atomic load.
bool graphCaptureInProgress() noexcept;

/// Grows or shrinks a device storage to `size_bytes`, keeping the common
/// prefix of its bytes (tensor.resize_, UntypedStorage.resize_).
void resizeStorageBytes(c10::StorageImpl* storage, std::size_t size_bytes);

/// The pinned host allocator (registered for the device type when the
/// backend has pinned memory, kPinnedMemory).
at::HostAllocator* getHostAllocator();

/// getHostAllocator() as a plain c10::Allocator (for the hooks).
c10::Allocator* getPinnedMemoryAllocator();

/// Whether `ptr` lies in pinned host memory from the driver.
bool isPinnedPtr(const void* ptr);

// -------------------------------------------------------------- generators

/// The default random generator of `device` (-1: current device).
const at::Generator& getDefaultGenerator(c10::DeviceIndex device = -1);

/// A new generator for `device` (-1: current device).
at::Generator makeGenerator(c10::DeviceIndex device = -1);

}  // namespace accgen::runtime
