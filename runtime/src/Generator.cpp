// Random generators of the device. The emulated device computes with CPU
// kernels, so its generator is the CPU one (mt19937 with the same state
// layout, so get_state/set_state round-trip) carrying the the device device and
// dispatch key. One default generator per device, made on first use; the
// hooks hand them to torch.Generator(device="<device>") and to kernels.
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>

#include "accgen/runtime/CpuGenerator.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

// --8<-- [start:device-generator]
class DeviceGenerator final : public at::CPUGeneratorImpl {
 public:
  explicit DeviceGenerator(c10::DeviceIndex device)
      : at::CPUGeneratorImpl(c10::default_rng_seed_val) {
    device_ = c10::Device(kDeviceType, device);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

 private:
  DeviceGenerator* clone_impl() const override {
    auto* copy = new DeviceGenerator(device_.index());
    copy->set_state(*get_state());
    return copy;
  }
};

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
  cpu_.set_state(device_.get_state());
}

CpuGeneratorScope::~CpuGeneratorScope() {
  device_.set_state(cpu_.get_state());
}
// --8<-- [end:cpu-generator-scope]

}  // namespace accgen::runtime
