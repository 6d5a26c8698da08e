// The negative control of the all-operator proof: one registration whose
// C++ signature is deliberately wrong (`self` by value instead of
// `const at::Tensor&`). Loading it must fail with the dispatcher's
// "Mismatch in kernel C++ signatures"; if it ever loads, the proof's load
// check would not catch a wrong mapping either (test_schema_compile.py).
#include <ATen/core/Tensor.h>
#include <torch/library.h>

namespace {

at::Tensor wrongAdd(at::Tensor self, const at::Tensor& other,
                    const at::Scalar& alpha) {
  TORCH_CHECK(false, "schema_compile: negative control, never called");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("add.Tensor", TORCH_FN(wrongAdd));
}
