// Streams and the c10 device guard of the device.
//
// --8<-- [start:stream-pools-note]
// Note [Device stream pools]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// As in CUDA, every device has its driver default stream plus two pools of
// RuntimeTuning::Streams::per_pool streams (4 unless tuned), one at the
// driver's least (normal) priority and one at its greatest priority. A device's
// pools are created on first use and handed out round-robin, so creating a
// torch.Stream never costs a driver call after the first. Pool streams live as
// long as the process. A c10::StreamId encodes the pool in its upper bits and
// the slot in the low kSlotBits bits; 0 is the default stream. Each host thread
// has its own current stream per device, which starts as the default stream.
// --8<-- [end:stream-pools-note]
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "Internal.h"
#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Runtime.h"
#include "accgen/runtime/Tuning.h"

namespace accgen::runtime {
namespace {

// Pools hold RuntimeTuning::Streams::per_pool streams, at most kMaxPerPool.
constexpr int kSlotBits = 5;
constexpr int kMaxPerPool = 1 << kSlotBits;

int streamsPerPool() {
  return tuning().streams.per_pool;
}

enum class StreamPool : int {
  kDefault = 0,
  kLowPriority = 1,
  kHighPriority = 2
};
constexpr int kNumPools = 2;  // the pools behind kLowPriority, kHighPriority

constexpr c10::StreamId makeStreamId(StreamPool pool, int slot) {
  return (static_cast<c10::StreamId>(pool) << kSlotBits) | slot;
}

constexpr StreamPool poolOf(c10::StreamId id) {
  return static_cast<StreamPool>(id >> kSlotBits);
}

constexpr int slotOf(c10::StreamId id) {
  return static_cast<int>(id & ((1 << kSlotBits) - 1));
}

struct DeviceStreams {
  // The driver's default stream, one handle for the life of the process
  // (accGetDefaultStream): asked for once, as every launch needs it.
  std::atomic<accStream_t> default_stream{nullptr};
  std::once_flag created;
  std::array<std::array<accStream_t, kMaxPerPool>, kNumPools> streams{};
  std::array<std::atomic<std::uint32_t>, kNumPools> next{};
};

// One entry per device, sized when the device count is first known.
std::vector<std::unique_ptr<DeviceStreams>>& deviceStreams() {
  static std::vector<std::unique_ptr<DeviceStreams>> all = [] {
    std::vector<std::unique_ptr<DeviceStreams>> v(deviceCount());
    for (auto& entry : v) {
      entry = std::make_unique<DeviceStreams>();
    }
    return v;
  }();
  return all;
}

DeviceStreams& poolsOf(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  DeviceStreams& entry = *deviceStreams()[device];
  std::call_once(entry.created, [&] {
    const c10::DeviceGuard guard(c10::Device(kDeviceType, device));
    int least = 0;
    int greatest = 0;
    ACCGEN_CHECK(accDeviceGetStreamPriorityRange(&least, &greatest));
    for (int slot = 0; slot < streamsPerPool(); ++slot) {
      ACCGEN_CHECK(
          accStreamCreateWithPriority(&entry.streams[0][slot], 0, least));
      ACCGEN_CHECK(
          accStreamCreateWithPriority(&entry.streams[1][slot], 0, greatest));
    }
  });
  return entry;
}

// The calling thread's current stream id per device (0: default stream).
std::vector<c10::StreamId>& currentStreamIds() {
  thread_local std::vector<c10::StreamId> ids(deviceCount(), 0);
  return ids;
}

// The driver's default stream of `device` (a checked index), asked of the
// driver once.
accStream_t defaultNativeStream(c10::DeviceIndex device) {
  std::atomic<accStream_t>& known = deviceStreams()[device]->default_stream;
  accStream_t handle = known.load(std::memory_order_acquire);
  if (C10_UNLIKELY(handle == nullptr)) {
    ACCGEN_CHECK(accGetDefaultStream(device, &handle));
    known.store(handle, std::memory_order_release);
  }
  return handle;
}

c10::Stream makeStream(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDeviceType, device), id);
}

}  // namespace

accStream_t nativeStream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == kDeviceType,
              "expected a stream of device type '", kDeviceName, "', got ",
              stream);
  const c10::DeviceIndex device = stream.device_index();
  checkDeviceIndex(device);
  const c10::StreamId id = stream.id();
  const StreamPool pool = poolOf(id);
  const int slot = slotOf(id);
  if (pool == StreamPool::kDefault && slot == 0) {
    return defaultNativeStream(device);
  }
  TORCH_CHECK(
      (pool == StreamPool::kLowPriority || pool == StreamPool::kHighPriority) &&
          slot < streamsPerPool(),
      "unknown ", kDeviceName, " stream id ", id, " on device ",
      static_cast<int>(device));
  return poolsOf(device).streams[static_cast<int>(pool) - 1][slot];
}

c10::Stream getCurrentStream(c10::DeviceIndex device) {
  device = resolveDevice(device);
  return makeStream(device, currentStreamIds()[device]);
}

c10::Stream getDefaultStream(c10::DeviceIndex device) {
  return makeStream(resolveDevice(device),
                    makeStreamId(StreamPool::kDefault, 0));
}

c10::Stream getStreamFromPool(c10::DeviceIndex device, int priority) {
  device = resolveDevice(device);
  const StreamPool pool =
      priority < 0 ? StreamPool::kHighPriority : StreamPool::kLowPriority;
  DeviceStreams& entry = poolsOf(device);
  const int slot = static_cast<int>(
      entry.next[static_cast<int>(pool) - 1].fetch_add(1) % streamsPerPool());
  return makeStream(device, makeStreamId(pool, slot));
}

c10::Stream exchangeCurrentStream(const c10::Stream& stream) {
  // Validates the stream (and creates its pool) before it becomes current.
  (void)nativeStream(stream);
  c10::StreamId& current = currentStreamIds()[stream.device_index()];
  const c10::Stream previous = makeStream(stream.device_index(), current);
  current = stream.id();
  return previous;
}

std::pair<int, int> streamPriorityRange() {
  initDriver();
  int least = 0;
  int greatest = 0;
  ACCGEN_CHECK(accDeviceGetStreamPriorityRange(&least, &greatest));
  return {least, greatest};
}

accStream_t currentNativeStream(c10::DeviceIndex device) {
  device = resolveDevice(device);
  const c10::StreamId id = currentStreamIds()[device];
  // Every launch asks: the default stream without nativeStream's checks of
  // a stream that comes from elsewhere.
  if (id == makeStreamId(StreamPool::kDefault, 0)) {
    return defaultNativeStream(device);
  }
  return nativeStream(makeStream(device, id));
}

at::Tensor ownedByLaunch(const at::Tensor& t) {
  if (!t.defined()) {
    return t;
  }
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (t.device().type() == kDeviceType && impl->has_storage()) {
    // The memory, not its owner: a StorageImpl whose DataPtr frees nothing.
    const c10::Storage& held = impl->unsafe_storage();
    c10::Storage memory(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), held.nbytes(),
        c10::DataPtr(const_cast<void*>(held.data()), t.device()),
        /*allocator=*/nullptr, /*resizable=*/false));
    // Its keys but Python's: nothing holds the alias's Python object.
    at::Tensor alias = detail::tensorOver(
        std::move(memory), impl->key_set() - c10::python_ks, impl->dtype(),
        t.sizes(), t.strides(), t.storage_offset());
    alias.unsafeGetTensorImpl()->set_version_counter(impl->version_counter());
    return alias;
  }
  // A reference more is free once one other than Python's exists.
  if (t.use_count() > 1 || impl->pyobj_slot()->load_pyobj() == nullptr) {
    return t;
  }
  return at::Tensor(impl->shallow_copy_and_detach(
      impl->version_counter(), /*allow_tensor_metadata_change=*/false));
}

namespace {

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kDeviceType; }

  c10::Device exchangeDevice(c10::Device device) const override {
    TORCH_INTERNAL_ASSERT(device.type() == kDeviceType);
    return {kDeviceType, accgen::runtime::exchangeDevice(device.index())};
  }

  c10::Device getDevice() const override {
    return {kDeviceType, currentDevice()};
  }

  void setDevice(c10::Device device) const override {
    TORCH_INTERNAL_ASSERT(device.type() == kDeviceType);
    if (device.index() >= 0) {
      accgen::runtime::setDevice(device.index());
    }
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    // Runs in destructors of guards: a failure here has nowhere to go.
    initDriver();
    if (device.index() >= 0) {
      (void)accSetDevice(device.index());
    }
  }

  c10::Stream getStream(c10::Device device) const override {
    return getCurrentStream(device.index());
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return accgen::runtime::getDefaultStream(device.index());
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device,
                                      bool is_high_priority) const override {
    return getStreamFromPool(device.index(), is_high_priority ? -1 : 0);
  }

  c10::Stream getNewStream(c10::Device device, int priority) const override {
    return getStreamFromPool(device.index(), priority);
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    return exchangeCurrentStream(stream);
  }

  void* getStreamNativeHandle(const c10::Stream stream) const override {
    return nativeStream(stream);
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return accgen::runtime::deviceCount();
  }

  c10::DeviceCapability getDeviceCapability(
      c10::Device /*device*/) const override {
    // Every dtype: the emulated device computes with the CPU kernels.
    return c10::DeviceCapability();
  }

  // --8<-- [start:guard-events]
  void record(void** event, const c10::Stream& stream,
              const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "Event device index ", static_cast<int>(device_index),
                " does not match recording stream's device index ",
                static_cast<int>(stream.device_index()), ".");
    const c10::DeviceGuard guard(stream.device());
    auto* native_event = static_cast<accEvent_t>(*event);
    if (native_event == nullptr) {
      // Timing costs the driver a clock read per record: only events that
      // asked for it (enable_timing=True) get it.
      const unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT
                                 ? accEventDefault
                                 : accEventDisableTiming;
      ACCGEN_CHECK(accEventCreateWithFlags(&native_event, flags));
      *event = native_event;
    }
    ACCGEN_CHECK(accEventRecord(native_event, nativeStream(stream)));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) {
      return;
    }
    ACCGEN_CHECK(accStreamWaitEvent(nativeStream(stream),
                                    static_cast<accEvent_t>(event), 0));
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) {
      return true;
    }
    const accError_t error = accEventQuery(static_cast<accEvent_t>(event));
    if (error == accErrorNotReady) {
      return false;
    }
    ACCGEN_CHECK(error);
    return true;
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/)
      const noexcept override {
    if (event != nullptr) {
      (void)accEventDestroy(static_cast<accEvent_t>(event));
    }
  }

  void synchronizeEvent(void* event) const override {
    if (event != nullptr) {
      ACCGEN_CHECK(accEventSynchronize(static_cast<accEvent_t>(event)));
    }
  }

  double elapsedTime(void* start, void* end,
                     const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(
        start != nullptr && end != nullptr,
        "Both events must be recorded before calculating elapsed time.");
    float milliseconds = 0;
    ACCGEN_CHECK(accEventElapsedTime(&milliseconds,
                                     static_cast<accEvent_t>(start),
                                     static_cast<accEvent_t>(end)));
    return milliseconds;
  }
  // --8<-- [end:guard-events]

  bool queryStream(const c10::Stream& stream) const override {
    const accError_t error = accStreamQuery(nativeStream(stream));
    if (error == accErrorNotReady) {
      return false;
    }
    ACCGEN_CHECK(error);
    return true;
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    ACCGEN_CHECK(accStreamSynchronize(nativeStream(stream)));
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    const c10::DeviceGuard guard(
        c10::Device(kDeviceType, resolveDevice(device_index)));
    ACCGEN_CHECK(accDeviceSynchronize());
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr,
                             const c10::Stream& stream) const override {
    recordStream(data_ptr, stream);
  }
};

}  // namespace

const c10::impl::DeviceGuardImplInterface* detail::guardImpl() {
  static const GuardImpl impl;
  return &impl;
}

}  // namespace accgen::runtime
