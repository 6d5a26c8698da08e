// The bodies of the custom operator kindly_ns::scaled_add. This file is yours:
// accgen created it once from specs/operators.yaml and never touches it
// again.
//
//   kindly_ns::scaled_add: scaled_add(Tensor self, Tensor other, float alpha=1.0) -> Tensor
//
// Write the kindly kernel, the Meta kernel (the shapes and dtypes of the
// results, for fake tensors and torch.compile) and the backward (one
// gradient per Tensor argument, from the gradients of the results).
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/Exception.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"

namespace kindly_ns::kernels {

at::Tensor kernel_scaled_add(const at::Tensor& self, const at::Tensor& other, double alpha) {
  TORCH_CHECK(false, "kindly_ns::scaled_add has no kindly kernel yet: write it in "
              "kernels/scaled_add.cpp");
}

at::Tensor meta_scaled_add(const at::Tensor& self, const at::Tensor& other, double alpha) {
  // The results of a shape-preserving operator; change it if yours is not.
  return at::empty_like(self);
}

std::vector<at::Tensor> backward_scaled_add(const std::vector<at::Tensor>& grad_outputs, const at::Tensor& self, const at::Tensor& other, double alpha) {
  TORCH_CHECK(false, "kindly_ns::scaled_add has no backward yet: write it in "
              "kernels/scaled_add.cpp");
}

}  // namespace kindly_ns::kernels
