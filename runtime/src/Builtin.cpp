// The builtin operators of the device: the minimal set every PrivateUse1
// backend needs before any computation works (allocation, views, resizing,
// copies between host and device and between devices, reading a scalar,
// re-pointing a tensor at a storage, recording a tensor's use on another
// stream). They are written against the driver interface alone, so a
// vendor's driver runs them unchanged.
//
// Note [Device copies]
// ~~~~~~~~~~~~~~~~~~~~
// Device memory cannot be touched by the host. A copy therefore moves the
// bytes of a dense ("non-overlapping and dense") tensor with one driver
// memcpy, and does everything else (dtype conversion, broadcasting, strided
// layouts, conjugate and negative views) either on the host side of the
// transfer, in a staging tensor laid out like its device counterpart, or on
// the device with a copy kernel launched on the current stream. The kernel
// views the device buffers as CPU tensors for its duration and runs the CPU
// copy over them. Host<->device copies wait for their stream, so pageable
// host memory can be reused when they return; copies within a device are
// stream-ordered and asynchronous; copies across devices wait for both.
#include <memory>
#include <vector>

#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_copy_from_and_resize_ops.h>
#include <ATen/ops/_copy_from_ops.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/_local_scalar_dense_ops.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/_reshape_alias_ops.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/as_strided_ops.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/empty_strided_ops.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/resize_ops.h>
#include <ATen/ops/set_ops.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/view_ops.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <torch/library.h>

#include "Internal.h"
#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/Registration.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

constexpr c10::DispatchKeySet kDeviceKeySet{c10::DispatchKey::PrivateUse1};

bool isDevice(const at::Tensor& tensor) {
  return tensor.device().type() == kDeviceType;
}

std::size_t byteSpan(const at::Tensor& tensor) {
  return static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
}

// Same bytes in the same places: one memcpy moves `from` into `to`.
bool sameLayout(const at::Tensor& from, const at::Tensor& to) {
  return from.scalar_type() == to.scalar_type() && from.sizes() == to.sizes() &&
         from.strides() == to.strides() &&
         from.is_non_overlapping_and_dense() &&
         to.is_non_overlapping_and_dense() && from.is_conj() == to.is_conj() &&
         from.is_neg() == to.is_neg();
}

// Host tensor laid out like `like` (sizes, strides, dtype, conj/neg bits).
at::Tensor hostStagingLike(const at::Tensor& like) {
  at::Tensor staging = at::empty_strided(
      like.sizes(), like.strides(),
      at::TensorOptions().dtype(like.scalar_type()).device(c10::kCPU));
  staging._set_conj(like.is_conj());
  staging._set_neg(like.is_neg());
  return staging;
}

// ---------------------------------------------------------- copy kernel

struct CopyKernelArgs {
  void* dst = nullptr;
  const void* src = nullptr;
  std::vector<int64_t> sizes;
  std::vector<int64_t> dst_strides;
  std::vector<int64_t> src_strides;
  c10::ScalarType dst_type{};
  c10::ScalarType src_type{};
  bool dst_conj = false;
  bool dst_neg = false;
  bool src_conj = false;
  bool src_neg = false;
};

// Runs with access to the two device buffers.
accError_t runCopyKernel(CopyKernelArgs& args) {
  try {
    at::Tensor dst = at::from_blob(args.dst, args.sizes, args.dst_strides,
                                   at::TensorOptions().dtype(args.dst_type));
    at::Tensor src =
        at::from_blob(const_cast<void*>(args.src), args.sizes, args.src_strides,
                      at::TensorOptions().dtype(args.src_type));
    dst._set_conj(args.dst_conj);
    dst._set_neg(args.dst_neg);
    src._set_conj(args.src_conj);
    src._set_neg(args.src_neg);
    dst.copy_(src);
  } catch (...) {
    return accErrorLaunchFailure;
  }
  return accSuccess;
}

// The bytes of `t`'s whole storage in a host tensor of `t`'s layout (the
// same sizes, strides and offset), read once the current stream got there.
at::Tensor hostCopyOfStorage(const at::Tensor& t) {
  const c10::Storage& storage = t.storage();
  at::Tensor bytes = at::empty({static_cast<int64_t>(storage.nbytes())},
                               at::TensorOptions().dtype(at::kByte));
  ACCGEN_CHECK(copyAsync(bytes.data_ptr(), storage.data(), storage.nbytes(),
                         accMemcpyDeviceToHost, currentNativeStream()));
  ACCGEN_CHECK(accStreamSynchronize(currentNativeStream()));
  at::Tensor host = at::empty({0}, t.options().device(c10::kCPU));
  host.set_(bytes.storage(), t.storage_offset(), t.sizes(), t.strides());
  host._set_conj(t.is_conj());
  host._set_neg(t.is_neg());
  return host;
}

// launchCopyKernel where the host cannot address device memory (Note [Host
// access]): both storages come to the host, the CPU copies there, and the
// destination's storage goes back whole, with the bytes around the view
// as they were.
void copyThroughHost(const at::Tensor& src, const at::Tensor& dst) {
  const at::Tensor host_src = hostCopyOfStorage(src);
  at::Tensor host_dst = hostCopyOfStorage(dst);
  host_dst.copy_(host_src);
  ACCGEN_CHECK(copyAsync(dst.storage().mutable_data(),
                         host_dst.storage().data(), dst.storage().nbytes(),
                         accMemcpyHostToDevice, currentNativeStream()));
}

// dst <- src on their (common) device, any dtypes and layouts, on the
// current stream.
void launchCopyKernel(const at::Tensor& src, const at::Tensor& dst) {
  if (C10_UNLIKELY(!hostComputes())) {
    copyThroughHost(src, dst);
    return;
  }
  auto args = std::make_unique<CopyKernelArgs>();
  args->dst = dst.data_ptr();
  args->src = src.const_data_ptr();
  args->sizes = dst.sizes().vec();
  args->dst_strides = dst.strides().vec();
  args->src_strides = src.strides().vec();
  args->dst_type = dst.scalar_type();
  args->src_type = src.scalar_type();
  args->dst_conj = dst.is_conj();
  args->dst_neg = dst.is_neg();
  args->src_conj = src.is_conj();
  args->src_neg = src.is_neg();
  const void* buffers[] = {args->dst, args->src};
  launchOwning<CopyKernelArgs, &runCopyKernel>(currentNativeStream(),
                                               std::move(args), buffers);
}

// ---------------------------------------------------------- copy paths

void copyDeviceToDevice(const at::Tensor& src, const at::Tensor& dst);

// Note [Asynchronous copies]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// As on CUDA, a copy with non_blocking=True between the device and pinned
// host memory does not wait for the stream: the host goes on while queued
// work, then the copy, runs. The pinned block is marked as used by the
// stream (record_event), so the pinned allocator does not hand it out again
// before the copy is done. A copy from pageable host memory returns once
// the driver consumed the source (accMemcpyAsync's contract), without
// waiting for the stream either; a copy into pageable memory, or through a
// host staging tensor, waits, since its bytes are read on return.
// non_blocking=False waits for the stream in every case.

// Marks the pinned block of `host` as used by the current stream, if it is
// one.
void recordPinnedUse(const at::Tensor& host) {
  const c10::DataPtr& data = host.storage().data_ptr();
  (void)getHostAllocator()->record_event(data.get(), data.get_context(),
                                         getCurrentStream(currentDevice()));
}

void copyHostToDevice(const at::Tensor& src, const at::Tensor& dst,
                      bool non_blocking) {
  const c10::DeviceGuard guard(dst.device());
  if (!dst.is_non_overlapping_and_dense()) {
    // Land the values in a dense device tensor, then scatter on the device.
    at::Tensor dense = at::empty(dst.sizes(), dst.options());
    copyHostToDevice(src, dense, non_blocking);
    copyDeviceToDevice(dense, dst);
    return;
  }
  at::Tensor staging = src;
  if (!sameLayout(src, dst)) {
    staging = hostStagingLike(dst);
    staging.copy_(src);
  }
  accStream_t stream = currentNativeStream();
  ACCGEN_CHECK(copyAsync(dst.data_ptr(), staging.const_data_ptr(),
                         byteSpan(dst), accMemcpyHostToDevice, stream));
  if (non_blocking) {
    recordPinnedUse(staging);
    return;
  }
  ACCGEN_CHECK(accStreamSynchronize(stream));
}

void copyDeviceToHost(const at::Tensor& src, const at::Tensor& dst,
                      bool non_blocking) {
  const c10::DeviceGuard guard(src.device());
  at::Tensor source = src;
  if (!source.is_non_overlapping_and_dense()) {
    source = source.contiguous();
  }
  const bool direct = sameLayout(source, dst);
  at::Tensor staging = direct ? dst : hostStagingLike(source);
  accStream_t stream = currentNativeStream();
  ACCGEN_CHECK(copyAsync(staging.data_ptr(), source.const_data_ptr(),
                         byteSpan(source), accMemcpyDeviceToHost, stream));
  if (non_blocking && direct && isPinnedPtr(dst.storage().data())) {
    recordPinnedUse(dst);
    return;
  }
  ACCGEN_CHECK(accStreamSynchronize(stream));
  if (!direct) {
    dst.copy_(staging);
  }
}

void copyDeviceToDevice(const at::Tensor& src, const at::Tensor& dst) {
  if (src.device() == dst.device()) {
    const c10::DeviceGuard guard(dst.device());
    if (sameLayout(src, dst)) {
      ACCGEN_CHECK(copyAsync(dst.data_ptr(), src.const_data_ptr(),
                             byteSpan(dst), accMemcpyDeviceToDevice,
                             currentNativeStream()));
    } else {
      launchCopyKernel(src, dst);
    }
    return;
  }
  // Across devices: make the source dense and complete on its device, move
  // its bytes with one driver copy, convert on the destination device.
  at::Tensor source = src;
  {
    const c10::DeviceGuard guard(src.device());
    if (!source.is_non_overlapping_and_dense()) {
      source = source.contiguous();
    }
    ACCGEN_CHECK(accStreamSynchronize(currentNativeStream()));
  }
  const c10::DeviceGuard guard(dst.device());
  const bool direct = sameLayout(source, dst);
  at::Tensor landed = dst;
  if (!direct) {
    landed = at::empty_strided(source.sizes(), source.strides(),
                               source.options().device(dst.device()));
    landed._set_conj(source.is_conj());
    landed._set_neg(source.is_neg());
  }
  accStream_t stream = currentNativeStream();
  ACCGEN_CHECK(copyAsync(landed.data_ptr(), source.const_data_ptr(),
                         byteSpan(source), accMemcpyDeviceToDevice, stream));
  // `source` may be a temporary of the other device: keep it until read.
  ACCGEN_CHECK(accStreamSynchronize(stream));
  if (!direct) {
    copyDeviceToDevice(landed, dst);
  }
}

void copyAny(const at::Tensor& src, const at::Tensor& dst,
             bool non_blocking = false) {
  TORCH_CHECK(
      (src.is_cpu() || isDevice(src)) && (dst.is_cpu() || isDevice(dst)),
      kDeviceName, " can copy between ", kDeviceName,
      " and cpu tensors only, got ", src.device(), " -> ", dst.device());
  // Note [Device misuse] in src/emulate/Aliases.cpp.
  for (const at::Tensor* t : {&src, &dst}) {
    if (isDevice(*t)) {
      emulate::checkInBounds(*t);
    }
  }
  if (dst.numel() == 0) {
    return;
  }
  const at::Tensor source =
      src.sizes() == dst.sizes() ? src : src.expand(dst.sizes());
  if (source.is_cpu() && dst.is_cpu()) {
    dst.copy_(source);
  } else if (source.is_cpu()) {
    copyHostToDevice(source, dst, non_blocking);
  } else if (dst.is_cpu()) {
    copyDeviceToHost(source, dst, non_blocking);
  } else {
    copyDeviceToDevice(source, dst);
  }
}

// ---------------------------------------------------------- resizing

// Gives `self` the sizes (and strides, if given) and grows its storage to
// hold them; the storage offset stays.
void resizeTensor(at::TensorImpl* self, c10::IntArrayRef size,
                  std::optional<c10::IntArrayRef> stride) {
  if (stride.has_value()) {
    self->set_sizes_and_strides(size, *stride);
  } else {
    self->set_sizes_contiguous(size);
  }
  if (self->numel() == 0) {
    return;
  }
  const std::size_t itemsize = self->dtype().itemsize();
  const std::size_t needed =
      stride.has_value() ? at::detail::computeStorageNbytes(
                               size, *stride, itemsize, self->storage_offset())
                         : at::detail::computeStorageNbytesContiguous(
                               size, itemsize, self->storage_offset());
  const c10::Storage& storage = self->unsafe_storage();
  if (needed > storage.nbytes()) {
    resizeStorageBytes(storage.unsafeGetStorageImpl(), needed);
  }
}

at::Tensor& setStorage(at::Tensor& self, c10::Storage source,
                       int64_t storage_offset, c10::IntArrayRef size,
                       c10::IntArrayRef stride) {
  const bool has_stride = stride.data() != nullptr;
  TORCH_CHECK(!has_stride || size.size() == stride.size(),
              "unequal size length (", size.size(), ") and stride length (",
              stride.size(), ")");
  TORCH_CHECK(storage_offset >= 0, "Tensor: invalid storage offset ",
              storage_offset);
  if (!self.storage().is_alias_of(source)) {
    TORCH_CHECK(self.storage().device() == source.device(),
                "Attempted to set the storage of a tensor on device \"",
                self.storage().device(),
                "\" to a storage on different device \"", source.device(),
                "\".  This is no longer allowed; the devices must match.");
    self.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(source));
  }
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  // Grows the storage when the view needs more of it, as set_ does on CPU.
  resizeTensor(
      self.unsafeGetTensorImpl(), size,
      has_stride ? std::optional<c10::IntArrayRef>(stride) : std::nullopt);
  return self;
}

// ---------------------------------------------------------- wrappers

// Note [Deterministic fills]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Under torch.use_deterministic_algorithms(True) with
// torch.utils.deterministic.fill_uninitialized_memory (its default), the CPU
// and CUDA fill the memory that empty and resize_ hand out uninitialized:
// NaN for floating point, the largest value for integers. The device does
// the same, so that a program reads the same values on either.
bool fillsUninitialized() {
  const at::Context& context = at::globalContext();
  return context.deterministicAlgorithms() &&
         context.deterministicFillUninitializedMemory();
}

at::Tensor filledIfDeterministic(at::Tensor t) {
  if (C10_UNLIKELY(fillsUninitialized())) {
    at::native::fill_empty_deterministic_(t);
  }
  return t;
}

at::Tensor wrapper_empty_memory_format(
    c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
    std::optional<at::Layout> layout, std::optional<at::Device> device,
    std::optional<bool> pin_memory,
    std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided, kDeviceName,
              " supports strided tensors only, got layout ", *layout);
  TORCH_CHECK(!pin_memory.value_or(false),
              "Only dense CPU tensors can be pinned");
  const c10::DeviceGuard guard(device.value_or(at::Device(kDeviceType)));
  return filledIfDeterministic(at::detail::empty_generic(
      C10_AS_INTARRAYREF_SLOW(size), getTensorAllocator(), kDeviceKeySet,
      c10::dtype_or_default(dtype), memory_format));
}

at::Tensor wrapper_empty_strided(c10::SymIntArrayRef size,
                                 c10::SymIntArrayRef stride,
                                 std::optional<at::ScalarType> dtype,
                                 std::optional<at::Layout> layout,
                                 std::optional<at::Device> device,
                                 std::optional<bool> pin_memory) {
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided, kDeviceName,
              " supports strided tensors only, got layout ", *layout);
  TORCH_CHECK(!pin_memory.value_or(false),
              "Only dense CPU tensors can be pinned");
  return filledIfDeterministic(emptyStrided(
      C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride),
      c10::dtype_or_default(dtype),
      device.has_value() ? device->index() : c10::DeviceIndex{-1}));
}

at::Tensor wrapper_as_strided(const at::Tensor& self, c10::SymIntArrayRef size,
                              c10::SymIntArrayRef stride,
                              std::optional<c10::SymInt> storage_offset) {
  return at::native::as_strided_tensorimpl(
      self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride),
      storage_offset.has_value()
          ? std::optional<int64_t>(storage_offset->expect_int())
          : std::nullopt);
}

at::Tensor wrapper_view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor wrapper__reshape_alias(const at::Tensor& self,
                                  c10::SymIntArrayRef size,
                                  c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& wrapper_resize_(
    const at::Tensor& self, c10::SymIntArrayRef size,
    std::optional<at::MemoryFormat> memory_format) {
  const c10::DeviceGuard guard(self.device());
  const auto old_nbytes = static_cast<int64_t>(self.storage().nbytes());
  resizeTensor(self.unsafeGetTensorImpl(), C10_AS_INTARRAYREF_SLOW(size),
               std::nullopt);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != at::MemoryFormat::Preserve,
                "Unsupported memory format ", *memory_format);
    self.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
  }
  if (C10_UNLIKELY(fillsUninitialized())) {
    // Only what the storage gained (Note [Deterministic fills]).
    at::native::fill_resize_deterministic_(self, old_nbytes);
  }
  return self;
}

at::Tensor wrapper__copy_from(const at::Tensor& self, const at::Tensor& dst,
                              bool non_blocking) {
  copyAny(self, dst, non_blocking);
  return dst;
}

at::Tensor wrapper__copy_from_and_resize(const at::Tensor& self,
                                         const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    dst.resize_(self.sizes());
  }
  copyAny(self, dst);
  return dst;
}

at::Scalar wrapper__local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(),
              " elements cannot be converted to Scalar");
  at::Tensor host = at::empty(
      {}, at::TensorOptions().dtype(self.scalar_type()).device(c10::kCPU));
  copyDeviceToHost(self.reshape({}), host, /*non_blocking=*/false);
  return at::_local_scalar_dense(host);
}

// The dispatcher's signature takes the offset by value.
at::Tensor& wrapper_set__source_Storage_storage_offset(
    at::Tensor& self, at::Storage source,
    c10::SymInt storage_offset,  // NOLINT(performance-unnecessary-value-param)
    c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return setStorage(self, std::move(source), storage_offset.expect_int(),
                    C10_AS_INTARRAYREF_SLOW(size),
                    C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor& wrapper_set__source_Storage(at::Tensor& self, at::Storage source) {
  const int64_t itemsize = static_cast<int64_t>(self.dtype().itemsize());
  const int64_t numel = static_cast<int64_t>(source.nbytes()) / itemsize;
  return setStorage(self, std::move(source), 0, {numel}, {});
}

at::Tensor& wrapper_set__source_Tensor(at::Tensor& self,
                                       const at::Tensor& source) {
  if (self.is_same(source)) {
    return self;
  }
  return setStorage(self, source.storage(), source.storage_offset(),
                    source.sizes(), source.strides());
}

at::Tensor& wrapper_set_(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, getTensorAllocator(),
                     /*resizable=*/true);
  return setStorage(self, std::move(empty), 0, {0}, {});
}

// Tensor.record_stream: the caching allocator keeps the memory from reuse
// until the work queued on `stream` when the tensor is freed completed
// (Note [Device caching allocator]).
void wrapper_record_stream(at::Tensor& self, at::Stream stream) {
  TORCH_CHECK(stream.device_type() == kDeviceType,
              "record_stream expects a stream of device type '", kDeviceName,
              "', got ", stream);
  recordStream(self.storage().data_ptr(), stream);
}

}  // namespace

// Note [Parameters keep their identity across .to()]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// nn.Module._apply moves a parameter with `param.data = moved`, which keeps
// the Parameter object (tied weights stay one object, an optimizer built
// before the move keeps working), only when
// torch._has_compatible_shallow_copy_type(param, moved) holds; otherwise it
// makes a new Parameter per module, and ties come apart. c10's rule for it
// (TensorImpl::has_compatible_shallow_copy_type) counts dense and sparse
// tensors of CPU, CUDA and the other in-tree devices and leaves PrivateUse1
// to its backend, whose kernel of the operator the dispatcher picks when
// either tensor is on the device. Here the device counts as one more such
// backend: c10's rule, with the device's tensors taken for CPU ones.
namespace {

c10::DispatchKeySet asCpu(c10::DispatchKeySet keys) {
  constexpr auto device_bit = c10::BackendComponent::PrivateUse1Bit;
  if (!keys.has_backend(device_bit)) {
    return keys;
  }
  return keys.remove_backend(device_bit) |
         c10::DispatchKeySet(c10::BackendComponent::CPUBit);
}

}  // namespace

namespace detail {

bool hasCompatibleShallowCopyType(const at::Tensor& self,
                                  const at::Tensor& from) {
  const c10::DispatchKeySet self_keys = asCpu(self.key_set());
  const c10::DispatchKeySet from_keys = asCpu(from.key_set());
  if (self_keys == self.key_set()) {
    return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(
        from_keys);
  }
  if (from_keys == from.key_set()) {
    return from.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(
        self_keys);
  }
  // Both on the device: c10's rule for two tensors of one backend, by the
  // kind of tensor (strided, sparse, sparse compressed; quantized ones only
  // with their own key set).
  const auto kind = [](const at::Tensor& t) {
    if (t.is_quantized()) {
      return -1;
    }
    switch (t.layout()) {
      case c10::kStrided:
        return 0;
      case c10::kSparse:
        return 1;
      case c10::kSparseCsr:
      case c10::kSparseCsc:
      case c10::kSparseBsr:
      case c10::kSparseBsc:
        return 2;
      default:
        return -1;
    }
  };
  return self_keys == from_keys ||
         (kind(self) >= 0 && kind(self) == kind(from));
}

// A tensor of zeros without memory (the ZeroTensor key), on the device as
// on CUDA: autograd's formulas (sgn's, and others where a gradient is known
// to be zero) make these. The CPU kernel would make a CPU ZeroTensor, whose
// null data the emulation engine would then copy to the device.
at::Tensor efficientZeroTensor(c10::SymIntArrayRef size,
                               std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> /*layout*/,
                               std::optional<c10::Device> device,
                               std::optional<bool> /*pin_memory*/) {
  const c10::Device where =
      device.value_or(c10::Device(kDeviceType, currentDevice()));
  const c10::DeviceGuard guard(where);
  at::native::ZeroTensorAllocator allocator(where);
  return at::detail::empty_generic(
      C10_AS_INTARRAYREF_SLOW(size), &allocator,
      kDeviceKeySet | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor),
      dtype.value_or(c10::get_default_dtype_as_scalartype()), std::nullopt);
}

}  // namespace detail

at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        c10::ScalarType dtype, c10::DeviceIndex device) {
  const c10::DeviceGuard guard(at::Device(kDeviceType, device));
  return at::detail::empty_strided_generic(size, stride, getTensorAllocator(),
                                           kDeviceKeySet, dtype);
}

// --8<-- [start:builtin-registrations]
// Every entry of the table has its kernel above, with the operator's exact
// signature (Note [The runtime's operator sets]).
#define ACCGEN_BUILTIN(name, ops, kernel)                                \
  static_assert(std::is_same_v<decltype(kernel), at::_ops::ops::schema>, \
                "the builtin kernel of " name                            \
                " does not have the operator's signature");
#include "accgen/runtime/OperatorSets.def"
#undef ACCGEN_BUILTIN

ACCGEN_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define ACCGEN_BUILTIN(name, ops, kernel) m.impl(name, TORCH_FN(kernel));
#include "accgen/runtime/OperatorSets.def"
#undef ACCGEN_BUILTIN
  // Not in the builtin set of the specs: the allocator's business rather
  // than an operator a vendor implements, so every backend has it.
  m.impl("record_stream", TORCH_FN(wrapper_record_stream));
  m.impl("_has_compatible_shallow_copy_type",
         TORCH_FN(detail::hasCompatibleShallowCopyType));
  m.impl("_efficientzerotensor", TORCH_FN(detail::efficientZeroTensor));
}
// --8<-- [end:builtin-registrations]

}  // namespace accgen::runtime

// The device's copies handle conjugate and negative views themselves (Note
// [Device copies]), so they pass through the Conjugate and Negative keys.
// The generic fallbacks of those keys would materialise the view first, by
// cloning, which copies, which lands in _copy_from again.
ACCGEN_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

ACCGEN_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
