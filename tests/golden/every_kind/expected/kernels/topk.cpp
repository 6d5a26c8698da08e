// The kindly kernel of topk. This file is yours: accgen created it once
// from specs/operators.yaml and never touches it again.
//
//   topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)
//
// The dispatcher calls it for topk. Until you write
// it, it runs aten's CPU kernel on the device memory (emulate::call), so the
// backend works from the start. Replace the body with your device's
// implementation: queue work on the current stream (launchOwning in
// accgen/runtime/Driver.h, which owns the launch's arguments until the kernel
// ran, or launchBorrowing, which lends it the caller's when it runs at once,
// as kernels/add_out.cpp of accgen's example does; accLaunchKernelSync makes
// the host wait) and keep the signature.
#include <ATen/core/Tensor.h>
#include <ATen/ops/topk_ops.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"

namespace kindly_ns::kernels {

::std::tuple<at::Tensor, at::Tensor> kernel_topk(const at::Tensor& self, c10::SymInt k, int64_t dim, bool largest, bool sorted) {
  return emulate::call<at::_ops::topk>(self, k, dim, largest, sorted);
}

}  // namespace kindly_ns::kernels
