// The accel kernel of add.out. This file is yours: accgen created it once
// from specs/operators.yaml and never touches it again.
//
//   add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) ->
//   Tensor(a!)
//
// The dispatcher calls it for add.out and, through the wrappers in
// csrc/ops/RegisterKernels.cpp, for add.Tensor, add_.Tensor.
//
// ATen's TensorIterator does the bookkeeping every elementwise kernel needs
// (broadcasting, resizing `out`, collapsing dimensions); type promotion
// casts the inputs first; the loop itself is ours and runs on the device as
// a kernel on the current stream, given the allocations of the operands.
#include <cstdint>
#include <memory>

#include <ATen/Dispatch_v2.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/MaybeOwned.h>
#include <c10/util/SmallVector.h>

#include "csrc/Backend.h"
#include "csrc/ops/KernelDecls.h"

namespace accel::kernels {
namespace {

// The loop's arguments: an iterator over the operands, borrowed from the
// caller when the loop runs at once, owning them when it is queued.
struct AddLaunch {
  at::TensorIterator iter;
  c10::Scalar alpha;
};

// The contiguous case, compiled twice (for AVX2 and for any x86-64) and
// picked at load time for the host the emulated device runs on; a real
// device's kernel is compiled for its own instruction set.
template <class T>
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx2", "default")))
#endif
void addContiguous(T* out, const T* a, const T* b, T alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<T>(a[i] + alpha * b[i]);
  }
}

template <class T>
accError_t addKernel(AddLaunch& launch) {
  const T alpha = launch.alpha.to<T>();
  // for_each splits the range over the device's compute threads (the
  // emulator's are the host's OpenMP threads).
  launch.iter.for_each([alpha](char** data, const int64_t* strides, int64_t n,
                               int64_t size1) {
    for (int64_t j = 0; j < size1; ++j) {
      char* out = data[0] + j * strides[3];
      const char* a = data[1] + j * strides[4];
      const char* b = data[2] + j * strides[5];
      if (strides[0] == sizeof(T) && strides[1] == sizeof(T) &&
          strides[2] == sizeof(T)) {
        addContiguous(reinterpret_cast<T*>(out), reinterpret_cast<const T*>(a),
                      reinterpret_cast<const T*>(b), alpha, n);
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

// An iterator over `out = a + alpha * b`: borrowing the operands, or owning
// them (tensors that hold neither Python's object nor the device memory:
// ownedByLaunch, so that no reference taken or dropped here goes through
// the GIL, and a tensor freed before the kernel ran is free at once). The
// owning iterator is built after the borrowing one, which sized `out`. A
// 0-dim CPU operand (a Python number) is read by the kernel from host
// memory, like a kernel argument.
at::TensorIterator addIterator(const at::Tensor& out, const at::Tensor& a,
                               const at::Tensor& b, bool owned) {
  at::TensorIteratorConfig config;
  if (owned) {
    config.add_owned_output(accgen::runtime::ownedByLaunch(out))
        .add_owned_const_input(accgen::runtime::ownedByLaunch(a))
        .add_owned_const_input(accgen::runtime::ownedByLaunch(b));
  } else {
    config.add_output(out).add_const_input(a).add_const_input(b);
  }
  return config.allow_cpu_scalars(true).build();
}

}  // namespace

at::Tensor& kernel_add_out(const at::Tensor& self, const at::Tensor& other,
                           const at::Scalar& alpha, at::Tensor& out) {
  // The loop computes in one dtype: the inputs are cast to the promoted
  // type first, and a result of another dtype goes through a temporary.
  const at::ScalarType dtype = at::result_type(self, other);
  at::native::alpha_check(dtype, alpha);
  TORCH_CHECK(at::canCast(dtype, out.scalar_type()), "result type ", dtype,
              " can't be cast to the desired output type ", out.scalar_type());
  const c10::DeviceGuard guard(out.device());
  const auto cast = [dtype](const at::Tensor& t) {
    return t.scalar_type() == dtype
               ? c10::MaybeOwned<at::Tensor>::borrowed(t)
               : c10::MaybeOwned<at::Tensor>::owned(t.to(dtype));
  };
  const c10::MaybeOwned<at::Tensor> a = cast(self);
  const c10::MaybeOwned<at::Tensor> b = cast(other);
  const c10::MaybeOwned<at::Tensor> result =
      out.scalar_type() == dtype ? c10::MaybeOwned<at::Tensor>::borrowed(out)
                                 : c10::MaybeOwned<at::Tensor>::owned(at::empty(
                                       {0}, out.options().dtype(dtype)));
  AddLaunch launch{addIterator(*result, *a, *b, /*owned=*/false), alpha};
  if (launch.iter.numel() > 0) {
    c10::SmallVector<const void*, 3> buffers;
    for (int i = 0; i < launch.iter.ntensors(); ++i) {
      const at::TensorBase& t = launch.iter.tensor_base(i);
      if (t.device() == out.device() && t.storage().data() != nullptr) {
        buffers.push_back(t.storage().data());
      }
    }
    accStream_t stream = currentNativeStream(out.device().index());
    AT_DISPATCH_V2(
        dtype, "add", AT_WRAP([&] {
          // At once on an idle stream, on the borrowed iterator; else
          // queued, owning its operands: the host goes on.
          accgen::runtime::launchBorrowing<AddLaunch, &addKernel<scalar_t>>(
              stream, launch, buffers, [&] {
                return std::make_unique<AddLaunch>(AddLaunch{
                    addIterator(*result, *a, *b, /*owned=*/true), alpha});
              });
        }),
        AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16,
        at::kBool);
  }
  if (!result->is_same(out)) {
    at::native::resize_output(out, result->sizes());
    out.copy_(*result);
  }
  return out;
}

}  // namespace accel::kernels
