// What the kernels of the ported example share: when a tensor is one the
// device code takes as it is (float32, contiguous, no conjugate or negative
// bit), and the launch of a device function by name on the current stream
// of the tensors' device. Everything else a kernel is called with goes to
// emulate::call, which runs aten's CPU kernel: through the CPU fallback with
// copies on this device (features.host_copies), on host aliases on the
// emulator.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>

#include "csrc/Backend.h"
#include "device/raccel_args.h"

namespace raccel::kernels {

inline bool denseFloat(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1 &&
         t.scalar_type() == at::kFloat && t.is_contiguous() && !t.is_conj() &&
         !t.is_neg();
}

/// Launches the device function `name` on the current stream of `on`'s
/// device.
template <class Args>
void launchOn(const at::Tensor& on, const char* name, const Args& args) {
  const c10::DeviceGuard guard(on.device());
  ::accgen::runtime::launchDeviceFunction(name, args);
}

}  // namespace raccel::kernels
