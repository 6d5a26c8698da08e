// The accel kernel of relu. This file is yours: accgen created it once from
// specs/operators.yaml and never touches it again.
//
//   relu(Tensor self) -> Tensor
//
// The dispatcher calls it for relu and, through the wrappers in
// csrc/ops/RegisterKernels.cpp, for relu_.
//
// A plain device kernel: a contiguous input, a new contiguous result and a
// loop over the elements, queued on the current stream.
#include <algorithm>
#include <memory>

#include <ATen/Dispatch_v2.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/MaybeOwned.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"

namespace accel::kernels {
namespace {

template <class T>
struct ReluLaunch {
  const T* in;
  T* out;
  int64_t n;
};

template <class T>
accError_t reluKernel(ReluLaunch<T>& p) {
  // Local copies: a store through `out` could otherwise change `p` for all
  // the compiler knows, which keeps the loop from vectorising.
  const T* in = p.in;
  T* out = p.out;
  const int64_t n = p.n;
  for (int64_t i = 0; i < n; ++i) {
    // A NaN stays NaN, as on the CPU and CUDA (relu is clamp_min(x, 0)):
    // NaN < 0 is false.
    out[i] = in[i] < T(0) ? T(0) : in[i];
  }
  return accSuccess;
}

}  // namespace

at::Tensor kernel_relu(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool,
              "relu is not defined for bool tensors");
  const c10::DeviceGuard guard(self.device());
  // Borrowed when contiguous: a copy of a tensor Python holds would take
  // the GIL (accgen::runtime::ownedByLaunch).
  const c10::MaybeOwned<at::Tensor> input = self.expect_contiguous();
  at::Tensor result = at::empty(input->sizes(), input->options());
  if (result.numel() == 0) {
    return result;
  }
  accStream_t stream = currentNativeStream(self.device().index());
  AT_DISPATCH_V2(
      input->scalar_type(), "relu", AT_WRAP([&] {
        auto launch = std::make_unique<ReluLaunch<scalar_t>>(
            ReluLaunch<scalar_t>{input->const_data_ptr<scalar_t>(),
                                 result.mutable_data_ptr<scalar_t>(),
                                 input->numel()});
        const void* buffers[] = {input->storage().data(),
                                 result.storage().data()};
        // Queued on the stream: the host goes on (the stream's order keeps
        // the memory of `input`, even if freed meanwhile, until it ran).
        accgen::runtime::launchOwning<ReluLaunch<scalar_t>,
                                      &reluKernel<scalar_t>>(
            stream, std::move(launch), buffers);
      }),
      AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBFloat16);
  return result;
}

}  // namespace accel::kernels
