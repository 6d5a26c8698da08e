// Random generators of the device. The emulated device computes with CPU
// kernels, so its generator drives the CPU's engine (mt19937), carrying the
// device and dispatch key. One default generator per device, made on first
// use; the hooks hand them to torch.Generator(device="<device>") and to
// kernels.
//
// Note [Device generator state]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A device generator's state is what a Philox generator's is on CUDA: 16
// bytes, a 64-bit seed and a 64-bit offset, which torch.distributed's
// DTensor reads and writes to give each shard its own part of a random
// stream. The engine behind it is mt19937 seeded from (seed, offset): with
// the seed itself at offset 0, so that the first random operator after
// manual_seed draws what the CPU draws, and from a mix of both otherwise.
// Each random operator draws from the engine as it stands (the CPU kernel
// gets its state through CpuGeneratorScope) and then moves the generator
// to the next offset, with a freshly seeded engine: between operators the
// state is exactly (seed, offset), so get_state/set_state round-trip, and
// ranks that agree on (seed, offset) draw alike.
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/GeneratorImpl.h>

#include "accgen/runtime/CpuGenerator.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

constexpr int64_t kStateBytes = 16;

// --8<-- [start:device-generator]
class DeviceGenerator final : public at::CPUGeneratorImpl {
 public:
  explicit DeviceGenerator(c10::DeviceIndex device)
      : at::CPUGeneratorImpl(c10::default_rng_seed_val) {
    device_ = c10::Device(kDeviceType, device);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
    reseedEngine();
  }

  uint64_t current_seed() const override { return seed_; }

  uint64_t seed() override {
    const uint64_t random = c10::detail::getNonDeterministicRandom();
    set_current_seed(random);
    return random;
  }

  void set_offset(uint64_t offset) override {
    offset_ = offset;
    reseedEngine();
  }

  uint64_t get_offset() const override { return offset_; }

  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    at::Tensor state = at::empty({kStateBytes}, at::kByte);
    auto* bytes = state.mutable_data_ptr<uint8_t>();
    std::memcpy(bytes, &seed_, sizeof seed_);
    std::memcpy(bytes + sizeof seed_, &offset_, sizeof offset_);
    return state.getIntrusivePtr();
  }

  void set_state(const c10::TensorImpl& state) override {
    at::detail::check_rng_state(state);
    TORCH_CHECK(state.numel() == kStateBytes, "Expected a ", kDeviceName,
                " RNG state of ", kStateBytes,
                " bytes (a 64-bit seed and a 64-bit offset), got ",
                state.numel());
    const auto* bytes = state.data_dtype_initialized<uint8_t>();
    std::memcpy(&seed_, bytes, sizeof seed_);
    std::memcpy(&offset_, bytes + sizeof seed_, sizeof offset_);
    reseedEngine();
  }

  /// The engine's state, in the CPU generator's layout (CpuGeneratorScope).
  at::Tensor engineState() const {
    return at::Tensor(at::CPUGeneratorImpl::get_state());
  }

  /// An operator drew from the engine: on to the next offset.
  void finishOperator() {
    ++offset_;
    reseedEngine();
  }

 private:
  void reseedEngine() {
    // splitmix64 of the seed and offset; the seed itself at offset 0.
    uint64_t mixed = seed_;
    if (offset_ != 0) {
      mixed = seed_ + 0x9E3779B97F4A7C15ULL * (offset_ + 1);
      mixed = (mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9ULL;
      mixed = (mixed ^ (mixed >> 27)) * 0x94D049BB133111EBULL;
      mixed ^= mixed >> 31;
    }
    at::CPUGeneratorImpl::set_current_seed(mixed);
  }

  DeviceGenerator* clone_impl() const override {
    auto* copy = new DeviceGenerator(device_.index());
    copy->set_state(*get_state());
    return copy;
  }

  uint64_t seed_ = c10::default_rng_seed_val;
  uint64_t offset_ = 0;
};

DeviceGenerator& deviceGenerator(const at::Generator& generator) {
  auto* device =
      dynamic_cast<DeviceGenerator*>(generator.unsafeGetGeneratorImpl());
  TORCH_CHECK(device != nullptr, "expected a generator of ", kDeviceName);
  return *device;
}

}  // namespace

const at::Generator& getDefaultGenerator(c10::DeviceIndex device) {
  // Never destroyed: kernels may still use them during static destruction.
  static const std::vector<at::Generator>* const generators = [] {
    auto* all = new std::vector<at::Generator>();
    const c10::DeviceIndex count = deviceCount();
    all->reserve(count);
    for (c10::DeviceIndex index = 0; index < count; ++index) {
      all->push_back(at::make_generator<DeviceGenerator>(index));
      // Seeded like CPU's default generator; torch.manual_seed reseeds all.
      all->back().set_current_seed(c10::default_rng_seed_val);
    }
    return all;
  }();
  return (*generators)[resolveDevice(device)];
}
// --8<-- [end:device-generator]

at::Generator makeGenerator(c10::DeviceIndex device) {
  return at::make_generator<DeviceGenerator>(resolveDevice(device));
}

// --8<-- [start:cpu-generator-scope]
CpuGeneratorScope::CpuGeneratorScope(
    const std::optional<at::Generator>& generator, c10::DeviceIndex device)
    : device_(generator.has_value() && generator->defined()
                  ? *generator
                  : getDefaultGenerator(device)),
      lock_(device_.mutex()),
      cpu_(at::detail::createCPUGenerator()) {
  TORCH_CHECK(device_.device().type() == kDeviceType,
              "expected a generator of device type '", kDeviceName,
              "', got one for ", device_.device());
  cpu_.set_state(deviceGenerator(device_).engineState());
}

CpuGeneratorScope::~CpuGeneratorScope() {
  // Note [Device generator state]: what the kernel drew is gone; the
  // generator moves on to its next offset.
  deviceGenerator(device_).finishOperator();
}
// --8<-- [end:cpu-generator-scope]

}  // namespace accgen::runtime
