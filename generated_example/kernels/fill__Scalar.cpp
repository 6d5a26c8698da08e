// The accel kernel of fill_.Scalar. This file is yours: accgen created it once
// from specs/operators.yaml and never touches it again.
//
//   fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)
//
// The dispatcher calls it for fill_.Scalar and, through the wrappers in
// csrc/ops/RegisterKernels.cpp, for fill.Scalar.
//
// A device kernel written against the driver interface alone: it stores the
// value over a dense tensor's memory in one run, or walks the elements of
// `self` (any strides), asynchronously on the current stream, the way a
// kernel on real hardware would run. Its
// parameters travel with the launch (accLaunchKernelOwned), which frees them
// once the driver needs them no more: after the kernel ran, or, when a
// graph captured it, once the graph is gone.
#include <algorithm>
#include <cstdint>

#include <ATen/Dispatch_v2.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"

namespace accel::kernels {
namespace {

// Any number of dimensions, as on the CPU: the ones of size 1 move no
// offset and are left out.
template <class T>
struct FillLaunch {
  T* data;
  T value;
  int dims;
  c10::SmallVector<int64_t, 6> sizes;
  c10::SmallVector<int64_t, 6> strides;
};

template <class T>
accError_t fillKernel(void* user_data) {
  auto* p = static_cast<FillLaunch<T>*>(user_data);
  c10::SmallVector<int64_t, 6> index(p->dims, 0);
  int64_t numel = 1;
  for (int d = 0; d < p->dims; ++d) {
    numel *= p->sizes[d];
  }
  // Dense memory (the launch folds a dense tensor into one dimension): one
  // run of stores, which the compiler vectorizes.
  if (p->dims == 1 && p->strides[0] == 1) {
    std::fill_n(p->data, numel, p->value);
    return accSuccess;
  }
  // An odometer over the dimensions, the last one fastest.
  int64_t offset = 0;
  for (int64_t i = 0; i < numel; ++i) {
    p->data[offset] = p->value;
    for (int d = p->dims - 1; d >= 0; --d) {
      if (++index[d] < p->sizes[d]) {
        offset += p->strides[d];
        break;
      }
      offset -= p->strides[d] * (p->sizes[d] - 1);
      index[d] = 0;
    }
  }
  return accSuccess;
}

template <class T>
void releaseFill(void* user_data) {
  delete static_cast<FillLaunch<T>*>(user_data);
}

}  // namespace

at::Tensor& kernel_fill__Scalar(at::Tensor& self, const at::Scalar& value) {
  if (self.numel() == 0) {
    return self;
  }
  const c10::DeviceGuard guard(self.device());
  AT_DISPATCH_V2(
      self.scalar_type(), "fill_", AT_WRAP([&] {
        auto* launch = new FillLaunch<scalar_t>{
            self.data_ptr<scalar_t>(), value.to<scalar_t>(), 0, {}, {}};
        if (self.is_non_overlapping_and_dense()) {
          // Its elements fill [data, data + numel) in some order.
          launch->sizes.push_back(self.numel());
          launch->strides.push_back(1);
        } else {
          for (int64_t d = 0; d < self.dim(); ++d) {
            if (self.size(d) != 1) {
              launch->sizes.push_back(self.size(d));
              launch->strides.push_back(self.stride(d));
            }
          }
        }
        launch->dims = static_cast<int>(launch->sizes.size());
        const void* buffers[] = {self.storage().data()};
        ACCEL_CHECK(accLaunchKernelOwned(
            currentNativeStream(self.device().index()), &fillKernel<scalar_t>,
            launch, &releaseFill<scalar_t>, buffers, 1));
      }),
      AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16,
      at::kBool);
  return self;
}

}  // namespace accel::kernels
