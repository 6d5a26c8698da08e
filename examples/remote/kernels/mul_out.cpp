// The raccel kernel of mul.out: device code (raccel_mul_f32) for float32
// operands of one shape, laid out contiguously; anything else on the CPU.
//
//   mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/mul_ops.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"
#include "kernels/raccel_launch.h"

namespace raccel::kernels {

at::Tensor& kernel_mul_out(const at::Tensor& self, const at::Tensor& other,
                           at::Tensor& out) {
  if (denseFloat(self) && denseFloat(other) &&
      self.sizes() == other.sizes() && out.scalar_type() == at::kFloat &&
      self.device() == other.device() && out.device() == self.device()) {
    at::native::resize_output(out, self.sizes());
    if (out.is_contiguous()) {
      launchOn(out, "raccel_mul_f32",
               BinaryArgs{out.data_ptr<float>(), self.const_data_ptr<float>(),
                          other.const_data_ptr<float>(), 1.0f,
                          static_cast<uint64_t>(out.numel())});
      return out;
    }
  }
  return emulate::call<at::_ops::mul_out>(self, other, out);
}

}  // namespace raccel::kernels
