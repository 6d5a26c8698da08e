// The raccel kernel of add.out: device code (raccel_add_f32) for float32
// operands of one shape, laid out contiguously; anything else on the CPU.
//
//   add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/add_ops.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"
#include "kernels/raccel_launch.h"

namespace raccel::kernels {

at::Tensor& kernel_add_out(const at::Tensor& self, const at::Tensor& other,
                           const at::Scalar& alpha, at::Tensor& out) {
  if (denseFloat(self) && denseFloat(other) && !alpha.isComplex() &&
      self.sizes() == other.sizes() && out.scalar_type() == at::kFloat &&
      self.device() == other.device() && out.device() == self.device()) {
    at::native::resize_output(out, self.sizes());
    if (out.is_contiguous()) {
      launchOn(out, "raccel_add_f32",
               BinaryArgs{out.data_ptr<float>(), self.const_data_ptr<float>(),
                          other.const_data_ptr<float>(), alpha.to<float>(),
                          static_cast<uint64_t>(out.numel())});
      return out;
    }
  }
  return emulate::call<at::_ops::add_out>(self, other, alpha, out);
}

}  // namespace raccel::kernels
