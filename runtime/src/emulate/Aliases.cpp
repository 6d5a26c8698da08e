// Host aliases of device tensors, and results back on the device.
#include <array>
#include <atomic>
#include <cstring>
#include <memory>

#include <ATen/EmptyTensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>

#include "../Internal.h"
#include "Engine.h"
#include "accgen/runtime/Driver.h"

namespace accgen::runtime {

at::Tensor detail::tensorOver(c10::Storage storage, c10::DispatchKeySet keys,
                              caffe2::TypeMeta dtype, c10::IntArrayRef sizes,
                              c10::IntArrayRef strides,
                              int64_t storage_offset) {
  auto t =
      at::detail::make_tensor<c10::TensorImpl>(std::move(storage), keys, dtype);
  t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides,
                                                 storage_offset);
  return t;
}

at::Tensor detail::tensorOver(c10::Storage storage, c10::DispatchKey key,
                              caffe2::TypeMeta dtype, c10::IntArrayRef sizes,
                              c10::IntArrayRef strides,
                              int64_t storage_offset) {
  return tensorOver(std::move(storage), c10::DispatchKeySet(key), dtype, sizes,
                    strides, storage_offset);
}

}  // namespace accgen::runtime

namespace accgen::runtime::emulate {
namespace {

using runtime::detail::tensorOver;

// Note [Host storage reuse]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A host alias holds nothing of the device tensor but its data pointer,
// size, dtype and geometry. Each thread keeps the last few aliases it made,
// and points one that nothing holds any more (no tensor, no queued kernel,
// no weak reference, its storage held by it alone), that the CPU kernel
// left as it was made (the same dispatch keys, so no conjugate or negative
// bit and not an inference tensor; not a wrapped number; no autograd
// metadata, Python object or backend metadata), at the next device memory
// to alias, preferring one that last held the same memory (the arguments
// of a loop's operators come back call after call; the memory each was
// pointed at is kept beside it, so that the search reads no alias but the
// one it takes) and setting only what changed. That spares two heap allocations
// and releases, the TensorImpl and its StorageImpl, and their construction, for
// each tensor argument of every emulated call. A storage a CPU kernel moved to
// host memory (an out= it grew) releases that memory when it is pointed
// elsewhere.
class HostAliases {
 public:
  // Out of line, so that the loop below reads the thread's aliases through
  // `this` rather than through a thread-local lookup per access.
  C10_NOINLINE at::Tensor take(void* data, std::size_t nbytes,
                               const at::Tensor& like, bool inference) {
    if (!inference) {
      // The kept alias of the same memory, found in data_ without reading
      // the aliases themselves (each a cache miss or two by the next call),
      // else the first idle one.
      std::size_t chosen = kKept;
      for (std::size_t i = 0; i < kKept; ++i) {
        if (data_[i] == data && kept_[i] && idle(kept_[i])) {
          chosen = i;
          break;
        }
      }
      for (std::size_t i = 0; chosen == kKept && i < kKept; ++i) {
        if (kept_[i] && idle(kept_[i])) {
          chosen = i;
        }
      }
      if (chosen != kKept) {
        c10::TensorImpl* impl = kept_[chosen].get();
        c10::StorageImpl* storage =
            impl->unsafe_storage().unsafeGetStorageImpl();
        if (storage->data() != data) {
          storage->set_data_ptr_noswap(
              c10::DataPtr(data, c10::Device(c10::kCPU)));
        }
        data_[chosen] = data;
        storage->set_nbytes(nbytes);
        if (impl->dtype() != like.dtype()) {
          impl->set_storage_and_dtype(impl->unsafe_storage(), like.dtype());
        }
        if (impl->sizes() != like.sizes() ||
            impl->strides() != like.strides() ||
            impl->storage_offset() != like.storage_offset()) {
          impl->set_sizes_and_strides(like.sizes(), like.strides(),
                                      like.storage_offset());
        }
        return at::Tensor(kept_[chosen]);
      }
    }
    // Resizable through the CPU allocator: an out= argument that the CPU
    // kernel grows moves to host memory and is copied back once.
    c10::Storage storage(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), nbytes,
        c10::DataPtr(data, c10::Device(c10::kCPU)),
        c10::GetAllocator(c10::kCPU), /*resizable=*/true));
    at::Tensor fresh =
        tensorOver(std::move(storage), c10::DispatchKey::CPU, like.dtype(),
                   like.sizes(), like.strides(), like.storage_offset());
    if (!inference) {
      keys_ = fresh.unsafeGetTensorImpl()->key_set();
      kept_[next_] = fresh.getIntrusivePtr();
      data_[next_] = data;
      next_ = (next_ + 1) % kKept;
    }
    return fresh;
  }

 private:
  static constexpr std::size_t kKept = 8;

  bool idle(const c10::intrusive_ptr<c10::TensorImpl>& kept) const {
    c10::TensorImpl& impl = *kept;
    return kept.use_count() == 1 && kept.weak_use_count() == 1 &&
           impl.unsafe_storage().use_count() == 1 && impl.key_set() == keys_ &&
           !impl.is_wrapped_number() && impl.autograd_meta() == nullptr &&
           impl.pyobj_slot()->load_pyobj() == nullptr &&
           impl.get_backend_meta() == nullptr;
  }

  std::array<c10::intrusive_ptr<c10::TensorImpl>, kKept> kept_;
  // The memory each kept alias was last pointed at.
  std::array<const void*, kKept> data_{};
  std::size_t next_ = 0;
  c10::DispatchKeySet keys_;
};

// A host alias of `like`'s geometry over `data` (Note [Host storage reuse]);
// `inference`: InferenceMode is on.
at::Tensor hostAlias(void* data, std::size_t nbytes, const at::Tensor& like,
                     bool inference) {
  thread_local HostAliases aliases;
  return aliases.take(data, nbytes, like, inference);
}

std::atomic<int64_t> g_kept_kernel_results{0};

struct PendingCopies {
  std::vector<DeviceCopies::Copy> copies;
};

accError_t runCopies(PendingCopies& pending) {
  for (const DeviceCopies::Copy& copy : pending.copies) {
    std::memcpy(copy.device_data, copy.host.const_data_ptr(), copy.nbytes);
  }
  return accSuccess;
}

}  // namespace

// Note [Device misuse]
// ~~~~~~~~~~~~~~~~~~~~
// What real hardware refuses, the emulation refuses too, before a kernel
// touches device memory, so that code which runs on the emulator does not
// break on the chip.

void checkInBounds(const at::TensorBase& t) {
  if (!t.defined() || t.numel() == 0) {
    return;
  }
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  const std::size_t held = impl->storage().nbytes();
  // Contiguous from the storage's start, as most are: its elements' bytes.
  const std::size_t needed =
      impl->storage_offset() == 0 && impl->is_contiguous()
          ? static_cast<std::size_t>(impl->numel()) * impl->itemsize()
          : at::detail::computeStorageNbytes(
                t.sizes(), t.strides(), t.itemsize(),
                static_cast<std::size_t>(t.storage_offset()));
  TORCH_CHECK(needed <= held, "a ", kDeviceName, " tensor of sizes ", t.sizes(),
              ", strides ", t.strides(), " and storage offset ",
              t.storage_offset(), " needs a storage of ", needed,
              " bytes; its storage holds ", held,
              " (resized or replaced after the tensor was made?)");
}

void SameDeviceCheck::add(const at::Tensor& t, bool written) {
  if (!t.defined()) {
    return;
  }
  if (t.device().type() == kDeviceType) {
    device_ = device_.value_or(t.device());
  } else if (t.device().type() == c10::kCPU && (written || t.dim() != 0)) {
    cpu_tensor_ = true;
  }
}

void SameDeviceCheck::add(const std::optional<at::Tensor>& t) {
  if (t.has_value()) {
    add(*t);
  }
}

void SameDeviceCheck::add(const at::ITensorListRef& ts) {
  for (const at::Tensor& t : ts) {
    add(t);
  }
}

void SameDeviceCheck::finish() const {
  TORCH_CHECK(!(cpu_tensor_ && device_.has_value()),
              "Expected all tensors to be on the same device, but found at "
              "least two devices, ",
              device_.value_or(c10::Device(kDeviceType)), " and cpu!");
}

void checkSameDevice(c10::ArrayRef<c10::IValue> args,
                     const c10::FunctionSchema& schema) {
  SameDeviceCheck check;
  const auto& arguments = schema.arguments();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& arg = args[i];
    if (arg.isTensor()) {
      const c10::AliasInfo* alias =
          i < arguments.size() ? arguments[i].alias_info() : nullptr;
      check.add(arg.toTensor(), alias != nullptr && alias->isWrite());
    } else if (arg.isTensorList()) {
      check.add(at::ITensorListRef(arg.toTensorList()));
    }
  }
  check.finish();
}

at::Tensor hostAlias(const at::Tensor& device_tensor) {
  detail::AliasSet aliases;
  return aliases.alias(device_tensor, /*written=*/false);
}

at::Tensor metaTensor(const at::Tensor& t) {
  c10::Storage storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), t.storage().nbytes(),
      c10::DataPtr(nullptr, c10::Device(c10::kMeta)),
      c10::GetAllocator(c10::kMeta), /*resizable=*/true));
  return tensorOver(std::move(storage), c10::DispatchKey::Meta, t.dtype(),
                    t.sizes(), t.strides(), t.storage_offset());
}

// The one copy of the emulation: a result in fresh host memory goes to a
// new device tensor, copied by a kernel that owns the host tensor until it
// ran, so that nothing waits for it (the stream orders what reads it).
at::Tensor copyToDevice(at::Tensor host, c10::Device device) {
  DeviceCopies copies;
  at::Tensor result = copies.add(std::move(host), device);
  copies.launch();
  return result;
}

at::Tensor DeviceCopies::add(at::Tensor host, c10::Device device) {
  // Note [Kernel results in device memory]: a result the kernel made in
  // device memory becomes the device tensor, in the CPU kernel's geometry
  // (the host may not read it to make it dense); its other results over
  // the same storage share it.
  c10::StorageImpl* storage = host.storage().unsafeGetStorageImpl();
  const c10::Storage* over = nullptr;
  for (const auto& [held, taken] : taken_) {
    if (held.unsafeGetStorageImpl() == storage) {
      over = &taken;
      break;
    }
  }
  if (over == nullptr) {
    if (c10::Storage taken =
            runtime::detail::takeDeviceBlock(*storage, device)) {
      g_kept_kernel_results.fetch_add(1, std::memory_order_relaxed);
      over = &taken_.emplace_back(host.storage(), std::move(taken)).second;
    }
  }
  if (over != nullptr) {
    return tensorOver(*over, c10::DispatchKey::PrivateUse1, host.dtype(),
                      host.sizes(), host.strides(), host.storage_offset());
  }
  if (!host.is_non_overlapping_and_dense()) {
    host = host.contiguous();
  }
  const c10::DeviceGuard guard(device);
  at::Tensor result =
      detail::allocateResult(host.sizes(), host.strides(), host.scalar_type());
  const std::size_t nbytes = at::detail::computeStorageNbytes(
      host.sizes(), host.strides(), host.itemsize());
  addInto(result.data_ptr(), std::move(host), nbytes);
  return result;
}

void DeviceCopies::addInto(void* device_data, at::Tensor host,
                           std::size_t nbytes) {
  if (nbytes > 0) {
    copies_.push_back({device_data, std::move(host), nbytes});
  }
}

void DeviceCopies::launch() {
  if (copies_.empty()) {
    return;
  }
  if (C10_UNLIKELY(!hostComputes())) {
    // Note [Host access]: the driver's copies, which consume pageable
    // memory before they return.
    for (const Copy& copy : copies_) {
      ACCGEN_CHECK(copyAsync(copy.device_data, copy.host.const_data_ptr(),
                             copy.nbytes, accMemcpyHostToDevice,
                             currentNativeStream()));
    }
    copies_.clear();
    return;
  }
  c10::SmallVector<const void*, 4> buffers;
  for (const Copy& copy : copies_) {
    buffers.push_back(copy.device_data);
  }
  auto pending = std::make_unique<PendingCopies>();
  pending->copies = std::move(copies_);
  copies_.clear();
  launchOwning<PendingCopies, &runCopies>(currentNativeStream(),
                                          std::move(pending), buffers);
}

at::Tensor HostViews::operator()(const at::Tensor& device_tensor) {
  if (!device_tensor.defined()) {
    return device_tensor;
  }
  TORCH_CHECK(device_tensor.device().type() == kDeviceType,
              "expected a tensor on device '", kDeviceName, "', got one on ",
              device_tensor.device());
  if (device_ < 0) {
    device_ = device_tensor.device().index();
  }
  TORCH_CHECK(device_tensor.device().index() == device_,
              "Expected all tensors to be on the same device, but found "
              "at least two devices, ",
              c10::Device(kDeviceType, device_), " and ",
              device_tensor.device(), "!");
  if (C10_UNLIKELY(!hostComputes())) {
    at::Tensor host = device_tensor.cpu();
    copies_.push_back({device_tensor, host, host.clone()});
    return host;
  }
  if (const void* data = device_tensor.storage().data(); data != nullptr) {
    buffers_.push_back(data);
  }
  bytes_ += device_tensor.nbytes();
  return hostAlias(device_tensor);
}

std::optional<at::Tensor> HostViews::operator()(
    const std::optional<at::Tensor>& t) {
  if (!t.has_value()) {
    return std::nullopt;
  }
  return (*this)(*t);
}

void HostViews::run(c10::function_ref<void()> fn) const {
  if (C10_UNLIKELY(!hostComputes())) {
    fn();
    // What the code wrote goes back. Kernels run below autograd, where
    // in-place writes move no version counter: the bytes tell.
    for (const Copied& copied : copies_) {
      if (!copied.host.equal(copied.before)) {
        at::Tensor(copied.device).copy_(copied.host);
      }
    }
    return;
  }
  runOnDevice(device().index(), buffers_, fn);
}

void HostViews::queue(std::function<void()> fn, std::string what) const {
  if (C10_UNLIKELY(!hostComputes())) {
    run(fn);
    return;
  }
  queueOnDevice(device().index(), buffers_, bytes_, std::move(fn),
                std::move(what));
}

c10::Device HostViews::device() const {
  return {kDeviceType, device_ < 0 ? currentDevice() : device_};
}

namespace detail {

at::Tensor AliasSet::alias(const at::Tensor& device, bool written,
                           bool borrowed) {
  if (device_ < 0) {
    device_ = device.device().index();
  } else {
    // What the device-generic kernels of other backends check: the
    // emulation would otherwise compute across devices without a word.
    TORCH_CHECK(device.device().index() == device_,
                "Expected all tensors to be on the same device, but found "
                "at least two devices, ",
                c10::Device(kDeviceType, device_), " and ", device.device(),
                "!");
  }
  c10::StorageImpl* impl = device.storage().unsafeGetStorageImpl();
  checkInBounds(device);
  bytes_ += device.nbytes();
  at::Tensor host;
  for (const auto& [known, shared] : storages_) {
    if (known == impl) {
      // Another alias of the same device storage shares its host storage.
      host =
          tensorOver(shared, c10::DispatchKey::CPU, device.dtype(),
                     device.sizes(), device.strides(), device.storage_offset());
      break;
    }
  }
  if (!host.defined()) {
    void* data = impl->mutable_data();
    if (inference_ < 0) {
      inference_ = c10::InferenceMode::is_enabled() ? 1 : 0;
    }
    host = hostAlias(data, impl->nbytes(), device, inference_ == 1);
    storages_.emplace_back(impl, host.unsafeGetTensorImpl()->unsafe_storage());
    if (data != nullptr) {
      buffers_.push_back(data);
    }
  }
  entries_.push_back(
      {borrowed ? c10::MaybeOwned<at::Tensor>::borrowed(device)
                : c10::MaybeOwned<at::Tensor>::owned(std::in_place, device),
       host, impl->data(), written});
  return host;
}

bool AliasSet::reconcileWritten() {
  bool moved_any = false;
  for (auto& e : entries_) {
    if (!e.written) {
      continue;
    }
    c10::TensorImpl* host = e.host.unsafeGetTensorImpl();
    c10::TensorImpl* dev = e.device->unsafeGetTensorImpl();
    const bool moved = e.host.storage().data() != e.device_data;
    moved_any = moved_any || moved;
    if (moved) {
      c10::DeviceGuard guard(e.device->device());
      c10::StorageImpl* storage = e.device->storage().unsafeGetStorageImpl();
      const std::size_t nbytes = e.host.storage().nbytes();
      resizeStorageBytes(storage, nbytes);
      if (nbytes > 0) {
        at::Tensor bytes = tensorOver(e.host.storage(), c10::DispatchKey::CPU,
                                      caffe2::TypeMeta::Make<uint8_t>(),
                                      {static_cast<int64_t>(nbytes)}, {1}, 0);
        DeviceCopies copies;
        copies.addInto(storage->mutable_data(), std::move(bytes), nbytes);
        copies.launch();
      }
    }
    if (moved || host->sizes() != dev->sizes() ||
        host->strides() != dev->strides() ||
        host->storage_offset() != dev->storage_offset()) {
      dev->set_sizes_and_strides(host->sizes(), host->strides(),
                                 host->storage_offset());
    }
  }
  return moved_any;
}

at::Tensor AliasSet::toDevice(const at::Tensor& result) {
  mapped_ += recording_ ? 1 : 0;
  if (!result.defined() || result.device().type() != c10::kCPU) {
    return result;
  }
  for (const auto& e : entries_) {
    if (e.host.unsafeGetTensorImpl() == result.unsafeGetTensorImpl()) {
      return *e.device;
    }
  }
  const c10::StorageImpl* storage = result.storage().unsafeGetStorageImpl();
  for (const auto& e : entries_) {
    if (e.host.storage().unsafeGetStorageImpl() == storage &&
        storage->data() == e.device->storage().data()) {
      return tensorOver(e.device->storage(), c10::DispatchKey::PrivateUse1,
                        result.dtype(), result.sizes(), result.strides(),
                        result.storage_offset());
    }
  }
  at::Tensor copy = copies_.add(result, c10::Device(kDeviceType, device_));
  if (recording_) {
    collectShapes(copy, fresh_);
  }
  return copy;
}

void AliasSet::launchCopies() {
  copies_.launch();
}

at::Tensor allocateResult(at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::ScalarType dtype) {
  return at::detail::empty_strided_generic(
      sizes, strides, getDeviceAllocator(),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype);
}

at::Tensor hostArg(AliasSet& aliases, const at::Tensor& t, bool written) {
  return onDevice(t) ? aliases.alias(t, written, /*borrowed=*/true) : t;
}

std::optional<at::Tensor> hostArg(AliasSet& aliases,
                                  const std::optional<at::Tensor>& t,
                                  bool written) {
  if (!t.has_value()) {
    return std::nullopt;
  }
  return hostArg(aliases, *t, written);
}

HostTensors hostArg(AliasSet& aliases, const at::ITensorListRef& ts,
                    bool written) {
  HostTensors host;
  host.tensors.reserve(ts.size());
  for (const at::Tensor& t : ts) {
    host.tensors.push_back(hostArg(aliases, t, written));
  }
  return host;
}

at::Tensor metaArg(const at::Tensor& t) {
  return onDevice(t) ? metaTensor(t) : t;
}

std::optional<at::Tensor> metaArg(const std::optional<at::Tensor>& t) {
  if (!t.has_value()) {
    return std::nullopt;
  }
  return metaArg(*t);
}

HostTensors metaArg(const at::ITensorListRef& ts) {
  HostTensors meta;
  meta.tensors.reserve(ts.size());
  for (const at::Tensor& t : ts) {
    meta.tensors.push_back(metaArg(t));
  }
  return meta;
}

void firstDevice(c10::DeviceIndex& device, const at::Tensor& t) {
  if (device < 0 && onDevice(t)) {
    device = t.device().index();
  }
}

void firstDevice(c10::DeviceIndex& device, const std::optional<at::Tensor>& t) {
  if (t.has_value()) {
    firstDevice(device, *t);
  }
}

}  // namespace detail
}  // namespace accgen::runtime::emulate

namespace accgen::runtime {

int64_t keptKernelResults() {
  return emulate::g_kept_kernel_results.load(std::memory_order_relaxed);
}

}  // namespace accgen::runtime
