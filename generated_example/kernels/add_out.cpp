// The accel kernel of add.out. This file is yours: accgen created it once
// from specs/operators.yaml and never touches it again.
//
//   add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
//
// The dispatcher calls it for add.out and, through the wrappers in
// csrc/ops/RegisterKernels.cpp, for add.Tensor, add_.Tensor.
//
// ATen's TensorIterator does the bookkeeping every elementwise kernel needs
// (broadcasting, resizing `out`, collapsing dimensions); type promotion
// casts the inputs first; the loop itself is ours and runs on the device as
// a kernel on the current stream, given the allocations of the operands.
#include <memory>

#include <ATen/Dispatch_v2.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"

namespace accel::kernels {
namespace {

// Owns its iterator (and, through it, the operands) until the kernel ran.
struct AddLaunch {
  at::TensorIterator iter;
  c10::Scalar alpha;
};

template <class T>
accError_t addKernel(AddLaunch& launch) {
  AddLaunch* p = &launch;
  const T alpha = p->alpha.to<T>();
  // for_each splits the range over the device's compute threads (the
  // emulator's are the host's OpenMP threads).
  p->iter.for_each(
      [alpha](char** data, const int64_t* strides, int64_t n, int64_t size1) {
        for (int64_t j = 0; j < size1; ++j) {
          char* out = data[0] + j * strides[3];
          const char* a = data[1] + j * strides[4];
          const char* b = data[2] + j * strides[5];
          if (strides[0] == sizeof(T) && strides[1] == sizeof(T) &&
              strides[2] == sizeof(T)) {
            // Contiguous: a loop the compiler vectorizes.
            T* o = reinterpret_cast<T*>(out);
            const T* x = reinterpret_cast<const T*>(a);
            const T* y = reinterpret_cast<const T*>(b);
            for (int64_t i = 0; i < n; ++i) {
              o[i] = static_cast<T>(x[i] + alpha * y[i]);
            }
            continue;
          }
          for (int64_t i = 0; i < n; ++i) {
            *reinterpret_cast<T*>(out + i * strides[0]) = static_cast<T>(
                *reinterpret_cast<const T*>(a + i * strides[1]) +
                alpha * *reinterpret_cast<const T*>(b + i * strides[2]));
          }
        }
      });
  return accSuccess;
}

}  // namespace

at::Tensor& kernel_add_out(const at::Tensor& self, const at::Tensor& other,
                           const at::Scalar& alpha, at::Tensor& out) {
  // The loop computes in one dtype: the inputs are cast to the promoted
  // type first, and a result of another dtype goes through a temporary.
  const at::ScalarType dtype = at::result_type(self, other);
  at::native::alpha_check(dtype, alpha);
  TORCH_CHECK(at::canCast(dtype, out.scalar_type()), "result type ", dtype,
              " can't be cast to the desired output type ",
              out.scalar_type());
  const c10::DeviceGuard guard(out.device());
  // The launch owns its inputs, as tensors Python does not hold
  // (ownedByLaunch: no trip through the GIL).
  const at::Tensor a = self.scalar_type() == dtype
                           ? accgen::runtime::ownedByLaunch(self)
                           : self.to(dtype);
  const at::Tensor b = other.scalar_type() == dtype
                           ? accgen::runtime::ownedByLaunch(other)
                           : other.to(dtype);
  at::Tensor result = out.scalar_type() == dtype
                          ? out
                          : at::empty({0}, out.options().dtype(dtype));
  // A 0-dim CPU operand (a Python number) is read by the kernel from host
  // memory, like a kernel argument.
  at::TensorIterator iter = at::TensorIteratorConfig()
                               .add_owned_output(result)
                               .add_owned_const_input(a)
                               .add_owned_const_input(b)
                               .allow_cpu_scalars(true)
                               .build();
  if (iter.numel() > 0) {
    c10::SmallVector<const void*, 3> buffers;
    for (int i = 0; i < iter.ntensors(); ++i) {
      const at::TensorBase& t = iter.tensor_base(i);
      if (t.device() == out.device() && t.storage().data() != nullptr) {
        buffers.push_back(t.storage().data());
      }
    }
    accStream_t stream = currentNativeStream(out.device().index());
    auto launch = std::make_unique<AddLaunch>(AddLaunch{std::move(iter), alpha});
    AT_DISPATCH_V2(
        dtype, "add", AT_WRAP([&] {
          // Queued on the stream, owning its iterator: the host goes on.
          accgen::runtime::launchOwning<AddLaunch, &addKernel<scalar_t>>(
              stream, std::move(launch), buffers);
        }),
        AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16,
        at::kBool);
  }
  if (!result.is_same(out)) {
    at::native::resize_output(out, result.sizes());
    out.copy_(result);
  }
  return out;
}

}  // namespace accel::kernels
