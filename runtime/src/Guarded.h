// ATen's device-generic kernels registered as they are, under the device
// guard that PyTorch's generated wrappers give them: they allocate on the
// current device, so a tensor made for `<device>:1` must be made while
// device 1 is current.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace accgen::runtime::detail {

template <class T>
void deviceOption(std::optional<c10::Device>& device, const T& arg) {
  if constexpr (std::is_same_v<std::decay_t<T>, std::optional<c10::Device>>) {
    if (!device.has_value()) {
      device = arg;
    }
  }
}

template <class T>
void tensorDevice(std::optional<c10::Device>& device, const T& arg) {
  if constexpr (std::is_base_of_v<at::TensorBase, std::decay_t<T>>) {
    if (!device.has_value() && arg.defined()) {
      device = arg.device();
    }
  }
}

/// `fn` (an at::native kernel with the dispatcher's signature) under a
/// device guard for its `Device?` argument when one is given, else for its
/// first defined tensor argument.
template <auto fn>
struct Guarded;

template <class R, class... Args, R (*fn)(Args...)>
struct Guarded<fn> {
  static R call(Args... args) {
    std::optional<c10::Device> device;
    (deviceOption(device, args), ...);
    (tensorDevice(device, args), ...);
    const c10::OptionalDeviceGuard guard(device);
    return fn(std::forward<Args>(args)...);
  }
};

/// The kernel Guarded<fn>, to register: `m.impl("op", guarded<&fn>())`.
template <auto fn>
torch::CppFunction guarded() {
  return torch::CppFunction(TORCH_FN(Guarded<fn>::call));
}

}  // namespace accgen::runtime::detail
