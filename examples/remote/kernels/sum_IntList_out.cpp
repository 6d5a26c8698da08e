// The raccel kernel of sum.IntList_out: device code (raccel_sum_f32) for a
// contiguous float32 tensor summed over all of its dimensions or over the
// last one; anything else on the CPU.
//
//   sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/sum_ops.h>
#include <c10/util/SmallVector.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"
#include "kernels/raccel_launch.h"

namespace raccel::kernels {

at::Tensor& kernel_sum_IntList_out(const at::Tensor& self,
                                   at::OptionalIntArrayRef dim, bool keepdim,
                                   ::std::optional<at::ScalarType> dtype,
                                   at::Tensor& out) {
  const bool all = !dim.has_value() || dim->empty();
  const bool last =
      !all && dim->size() == 1 && self.dim() > 0 &&
      ((*dim)[0] == self.dim() - 1 || (*dim)[0] == -1);
  if (denseFloat(self) && self.numel() > 0 && (all || last) &&
      dtype.value_or(at::kFloat) == at::kFloat &&
      out.scalar_type() == at::kFloat && out.device() == self.device() &&
      !out.storage().is_alias_of(self.storage())) {
    c10::SmallVector<int64_t, 6> shape;
    int64_t n = self.numel();
    if (all) {
      shape.assign(keepdim ? self.dim() : 0, 1);
    } else {
      n = self.size(-1);
      shape.assign(self.sizes().begin(), self.sizes().end() - 1);
      if (keepdim) {
        shape.push_back(1);
      }
    }
    at::native::resize_output(out, shape);
    if (out.is_contiguous()) {
      launchOn(out, "raccel_sum_f32",
               ReduceArgs{out.data_ptr<float>(), self.const_data_ptr<float>(),
                          static_cast<uint64_t>(self.numel() / n),
                          static_cast<uint64_t>(n)});
      return out;
    }
  }
  return emulate::call<at::_ops::sum_IntList_out>(self, dim, keepdim, dtype,
                                                  out);
}

}  // namespace raccel::kernels
