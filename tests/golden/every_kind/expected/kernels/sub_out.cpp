// The kindly kernel of sub.out. This file is yours: accgen created it once
// from specs/operators.yaml and never touches it again.
//
//   sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
//
// The dispatcher calls it for sub.out and, through the wrappers in
// csrc/ops/RegisterKernels.cpp, for sub.Tensor, sub_.Tensor. Until you write
// it, it runs aten's CPU kernel on the device memory (emulate::call), so the
// backend works from the start. Replace the body with your device's
// implementation: queue work on the current stream (launchOwning in
// accgen/runtime/Driver.h, which owns the launch's arguments until the kernel
// ran, or launchBorrowing, which lends it the caller's when it runs at once,
// as kernels/add_out.cpp of accgen's example does; accLaunchKernelSync makes
// the host wait) and keep the signature.
#include <ATen/core/Tensor.h>
#include <ATen/ops/sub_ops.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"

namespace kindly_ns::kernels {

at::Tensor& kernel_sub_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {
  return emulate::call<at::_ops::sub_out>(self, other, alpha, out);
}

}  // namespace kindly_ns::kernels
