// The raccel kernel of mm.out: device code (raccel_mm_f32) for contiguous
// float32 matrices into a result that shares no memory with them; anything
// else on the CPU.
//
//   mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/mm_ops.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"
#include "kernels/raccel_launch.h"

namespace raccel::kernels {

at::Tensor& kernel_mm_out(const at::Tensor& self, const at::Tensor& mat2,
                          at::Tensor& out) {
  if (denseFloat(self) && denseFloat(mat2) && self.dim() == 2 &&
      mat2.dim() == 2 && self.size(1) == mat2.size(0) &&
      out.scalar_type() == at::kFloat && self.device() == mat2.device() &&
      out.device() == self.device() &&
      !out.storage().is_alias_of(self.storage()) &&
      !out.storage().is_alias_of(mat2.storage())) {
    at::native::resize_output(out, {self.size(0), mat2.size(1)});
    if (out.is_contiguous()) {
      if (out.numel() > 0) {
        launchOn(out, "raccel_mm_f32",
                 MatmulArgs{out.data_ptr<float>(), self.const_data_ptr<float>(),
                            mat2.const_data_ptr<float>(),
                            static_cast<uint64_t>(self.size(0)),
                            static_cast<uint64_t>(self.size(1)),
                            static_cast<uint64_t>(mat2.size(1))});
      }
      return out;
    }
  }
  return emulate::call<at::_ops::mm_out>(self, mat2, out);
}

}  // namespace raccel::kernels
