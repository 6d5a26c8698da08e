// The raccel kernel of relu: device code (raccel_relu_f32) for a contiguous
// float32 tensor; anything else on the CPU.
//
//   relu(Tensor self) -> Tensor
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/relu_ops.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"
#include "kernels/raccel_launch.h"

namespace raccel::kernels {

at::Tensor kernel_relu(const at::Tensor& self) {
  if (!denseFloat(self)) {
    return emulate::call<at::_ops::relu>(self);
  }
  at::Tensor out = at::empty(self.sizes(), self.options());
  if (out.numel() > 0) {
    launchOn(out, "raccel_relu_f32",
             UnaryArgs{out.data_ptr<float>(), self.const_data_ptr<float>(),
                       static_cast<uint64_t>(out.numel())});
  }
  return out;
}

}  // namespace raccel::kernels
