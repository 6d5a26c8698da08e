// The raccel kernel of fill_.Scalar: device code (raccel_fill) stores one
// element's bytes over a dense tensor, whatever its dtype; other layouts
// run on the CPU.
//
//   fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)
#include <cstring>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/fill_ops.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"
#include "kernels/raccel_launch.h"

namespace raccel::kernels {

at::Tensor& kernel_fill__Scalar(at::Tensor& self, const at::Scalar& value) {
  if (self.numel() == 0) {
    return self;
  }
  if (!self.is_non_overlapping_and_dense() || self.is_conj() ||
      self.is_neg() || self.element_size() > sizeof(FillArgs::pattern)) {
    return emulate::call<at::_ops::fill__Scalar>(self, value);
  }
  // The element's bytes, as the CPU converts the value to the dtype.
  at::Tensor one = at::empty({}, at::TensorOptions().dtype(self.scalar_type()));
  one.fill_(value);
  FillArgs args{};
  args.data = self.data_ptr();
  args.numel = static_cast<uint64_t>(self.numel());
  args.itemsize = static_cast<uint64_t>(self.element_size());
  std::memcpy(args.pattern, one.const_data_ptr(), args.itemsize);
  launchOn(self, "raccel_fill", args);
  return self;
}

}  // namespace raccel::kernels
