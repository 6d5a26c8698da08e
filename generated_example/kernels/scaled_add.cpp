// The bodies of the custom operator accel::scaled_add. This file is yours:
// accgen created it once from specs/operators.yaml and never touches it
// again.
//
//   accel::scaled_add: scaled_add(Tensor self, Tensor other, float alpha=1.0) -> Tensor
//
// self + alpha * other for two floating-point tensors of one shape: a device
// kernel over contiguous copies, the Meta kernel that lets fake tensors (and
// torch.compile) trace it, and the backward that autograd calls.
#include <memory>
#include <vector>

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/MaybeOwned.h>
#include <c10/util/Exception.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"

namespace accel::kernels {
namespace {

void checkArguments(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.sizes() == other.sizes(),
              "accel::scaled_add: self and other must have one shape, got ",
              self.sizes(), " and ", other.sizes());
  TORCH_CHECK(self.scalar_type() == other.scalar_type(),
              "accel::scaled_add: self and other must have one dtype, got ",
              self.scalar_type(), " and ", other.scalar_type());
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "accel::scaled_add: expected floating-point tensors, got ",
              self.scalar_type());
}

template <class T>
struct ScaledAddLaunch {
  const T* self;
  const T* other;
  T* out;
  double alpha;
  int64_t n;
};

template <class T>
accError_t scaledAddKernel(ScaledAddLaunch<T>& p) {
  using Acc = at::opmath_type<T>;
  const Acc alpha = static_cast<Acc>(p.alpha);
  for (int64_t i = 0; i < p.n; ++i) {
    p.out[i] = static_cast<T>(static_cast<Acc>(p.self[i]) +
                              alpha * static_cast<Acc>(p.other[i]));
  }
  return accSuccess;
}

}  // namespace

at::Tensor kernel_scaled_add(const at::Tensor& self, const at::Tensor& other,
                             double alpha) {
  checkArguments(self, other);
  TORCH_CHECK(self.device() == other.device(),
              "accel::scaled_add: self and other must be on one device, got ",
              self.device(), " and ", other.device());
  const c10::DeviceGuard guard(self.device());
  // Borrowed when contiguous (accgen::runtime::ownedByLaunch says why).
  const c10::MaybeOwned<at::Tensor> a = self.expect_contiguous();
  const c10::MaybeOwned<at::Tensor> b = other.expect_contiguous();
  at::Tensor out = at::empty(a->sizes(), a->options());
  if (out.numel() == 0) {
    return out;
  }
  accStream_t stream = currentNativeStream(self.device().index());
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, a->scalar_type(), "scaled_add", [&] {
        auto launch = std::make_unique<ScaledAddLaunch<scalar_t>>(
            ScaledAddLaunch<scalar_t>{
                a->const_data_ptr<scalar_t>(), b->const_data_ptr<scalar_t>(),
                out.mutable_data_ptr<scalar_t>(), alpha, a->numel()});
        const void* buffers[] = {a->storage().data(), b->storage().data(),
                                 out.storage().data()};
        accgen::runtime::launchOwning<ScaledAddLaunch<scalar_t>,
                                      &scaledAddKernel<scalar_t>>(
            stream, std::move(launch), buffers);
      });
  return out;
}

at::Tensor meta_scaled_add(const at::Tensor& self, const at::Tensor& other,
                           double alpha) {
  checkArguments(self, other);
  return at::empty_like(self, at::MemoryFormat::Contiguous);
}

std::vector<at::Tensor> backward_scaled_add(
    const std::vector<at::Tensor>& grad_outputs, const at::Tensor& self,
    const at::Tensor& other, double alpha) {
  const at::Tensor& grad = grad_outputs[0];
  return {grad, at::mul(grad, alpha)};
}

}  // namespace accel::kernels
