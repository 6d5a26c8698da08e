// The emulation engine's two argument representations (Note [Two argument
// representations] in accgen/runtime/detail/EmulateEngine.h) run one
// algorithm: each operator here runs once through the typed representation
// and once through the boxed one, with the same rule (and shape function),
// and the two must agree on everything a caller sees: the values (and the
// CPU's), which results are arguments or views of them, the warnings, what
// an out= argument of the wrong size becomes, and the errors.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/ops/add_meta_dispatch.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/cat_meta_dispatch.h>
#include <ATen/ops/cat_ops.h>
#include <ATen/ops/diagonal_ops.h>
#include <ATen/ops/index_select_ops.h>
#include <ATen/ops/max_meta_dispatch.h>
#include <ATen/ops/max_ops.h>
#include <ATen/ops/mse_loss_backward_ops.h>
#include <ATen/ops/mse_loss_meta_dispatch.h>
#include <ATen/ops/mse_loss_ops.h>
#include <ATen/ops/nonzero_ops.h>
#include <ATen/ops/sqrt_meta_dispatch.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/topk_meta_dispatch.h>
#include <ATen/ops/topk_ops.h>

#include "emulate/Engine.h"

namespace accgen::runtime::emulate::detail {
namespace {

const c10::Device kDevice0(c10::DeviceType::PrivateUse1, 0);

at::Tensor shapeAdd(const at::Tensor& self, const at::Tensor& other,
                    const at::Scalar& alpha) {
  return at::meta::add(self, other, alpha);
}
at::Tensor shapeSqrt(const at::Tensor& self) {
  return at::meta::sqrt(self);
}
at::Tensor shapeCat(const at::ITensorListRef& tensors, int64_t dim) {
  return at::meta::cat(tensors, dim);
}
std::tuple<at::Tensor, at::Tensor> shapeTopk(const at::Tensor& self,
                                             c10::SymInt k, int64_t dim,
                                             bool largest, bool sorted) {
  return at::meta::topk_symint(self, std::move(k), dim, largest, sorted);
}
std::tuple<at::Tensor, at::Tensor> shapeMaxDim(const at::Tensor& self,
                                               int64_t dim, bool keepdim) {
  return at::meta::max(self, dim, keepdim);
}
at::Tensor shapeMseLoss(const at::Tensor& self, const at::Tensor& target,
                        int64_t reduction) {
  return at::meta::mse_loss(self, target, reduction);
}

template <class Op, auto Shape>
Rule* makeRule() {
  auto* rule = new Rule(handleOf<Op>(), kHasShape<Shape>);
  if constexpr (kHasShape<Shape>) {
    rule->shape = c10::KernelFunction::makeFromUnboxedFunction(
        c10::CompileTimeFunctionPointer<std::remove_pointer_t<decltype(Shape)>,
                                        Shape>());
  }
  return rule;
}

// The boxed representation, with a rule of its own made as the typed one
// is (the same shape function).
template <class Op, auto Shape>
void boxedEntry(const c10::OperatorHandle& /*op*/, torch::jit::Stack* stack) {
  static Rule* rule = makeRule<Op, Shape>();
  runStack(*rule, stack);
}

template <class Op, auto Shape = nullptr, class... Args>
decltype(auto) viaBoxed(Args&&... args) {
  using Schema = typename Op::schema;
  static const auto typed = handleOf<Op>().template typed<Schema>();
  return c10::impl::BoxedKernelWrapper<Schema>::call(
      c10::BoxedKernel::makeFromFunction<&boxedEntry<Op, Shape>>(), typed,
      c10::DispatchKeySet(), std::forward<Args>(args)...);
}

template <class Op, auto Shape = nullptr, class... Args>
decltype(auto) viaTyped(Args&&... args) {
  return TypedKernel<Op, Shape>::call(std::forward<Args>(args)...);
}

// The warnings raised while `fn` runs.
class Warnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    messages.push_back(warning.msg());
  }
  std::vector<std::string> messages;
};

template <class Fn>
std::vector<std::string> warningsOf(Fn fn) {
  Warnings warnings;
  const c10::WarningUtils::WarningHandlerGuard guard(&warnings);
  fn();
  return warnings.messages;
}

// The error `fn` raises ("" for none).
template <class Fn>
std::string errorOf(Fn fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

at::Tensor onDevice(const at::Tensor& host) {
  return host.to(kDevice0);
}

void expectSame(const at::Tensor& device, const at::Tensor& expected) {
  ASSERT_EQ(device.device(), kDevice0);
  EXPECT_EQ(device.sizes(), expected.sizes());
  EXPECT_EQ(device.scalar_type(), expected.scalar_type());
  EXPECT_TRUE(at::allclose(device.cpu(), expected)) << device.cpu() << expected;
}

TEST(EmulateRepresentations, AFunctionalOperatorWithAShapeFunction) {
  const at::Tensor a = at::randn({3, 4});
  const at::Tensor b = at::randn({3, 4});
  const at::Tensor da = onDevice(a);
  const at::Tensor db = onDevice(b);
  const at::Tensor expected = at::add(a, b, 2);
  const at::Tensor typed = viaTyped<at::_ops::add_Tensor, &shapeAdd>(da, db, 2);
  const at::Tensor boxed = viaBoxed<at::_ops::add_Tensor, &shapeAdd>(da, db, 2);
  expectSame(typed, expected);
  expectSame(boxed, expected);
  // New results, in storages of their own.
  EXPECT_FALSE(typed.is_alias_of(da));
  EXPECT_FALSE(boxed.is_alias_of(da));
  // A CPU scalar beside device tensors is fine; a CPU tensor is not.
  const at::Tensor scalar = at::scalar_tensor(3.0);
  expectSame(viaTyped<at::_ops::add_Tensor, &shapeAdd>(da, scalar, 1), a + 3);
  expectSame(viaBoxed<at::_ops::add_Tensor, &shapeAdd>(da, scalar, 1), a + 3);
  const std::string typed_error =
      errorOf([&] { viaTyped<at::_ops::add_Tensor, &shapeAdd>(da, b, 1); });
  EXPECT_NE(typed_error.find("Expected all tensors to be on the same device"),
            std::string::npos)
      << typed_error;
  EXPECT_EQ(typed_error, errorOf([&] {
              viaBoxed<at::_ops::add_Tensor, &shapeAdd>(da, b, 1);
            }));
}

TEST(EmulateRepresentations, ShapeErrorsAreTheCpuKernels) {
  const at::Tensor da = onDevice(at::randn({3, 4}));
  const at::Tensor db = onDevice(at::randn({5}));
  const std::string cpu = errorOf([&] {
    at::add(at::randn({3, 4}), at::randn({5}));
  });
  ASSERT_NE(cpu, "");
  EXPECT_EQ(cpu, errorOf([&] {
              viaTyped<at::_ops::add_Tensor, &shapeAdd>(da, db, 1);
            }));
  EXPECT_EQ(cpu, errorOf([&] {
              viaBoxed<at::_ops::add_Tensor, &shapeAdd>(da, db, 1);
            }));
}

TEST(EmulateRepresentations, InPlaceAndOutFormsWriteTheirArguments) {
  const at::Tensor a = at::randn({2, 5});
  const at::Tensor b = at::randn({2, 5});
  for (const bool typed : {true, false}) {
    SCOPED_TRACE(typed ? "typed" : "boxed");
    at::Tensor self = onDevice(a);
    const at::Tensor other = onDevice(b);
    at::Tensor& written = typed
                              ? viaTyped<at::_ops::add__Tensor>(self, other, 1)
                              : viaBoxed<at::_ops::add__Tensor>(self, other, 1);
    EXPECT_EQ(&written, &self);
    expectSame(self, a + b);

    at::Tensor out = onDevice(at::empty({2, 5}));
    const void* data = out.const_data_ptr();
    at::Tensor& result =
        typed ? viaTyped<at::_ops::add_out>(onDevice(a), other, 1, out)
              : viaBoxed<at::_ops::add_out>(onDevice(a), other, 1, out);
    EXPECT_EQ(&result, &out);
    EXPECT_EQ(out.const_data_ptr(), data);
    expectSame(out, a + b);
  }
}

TEST(EmulateRepresentations, AnOutArgumentOfTheWrongSizeIsResizedWithAWarning) {
  const at::Tensor a = at::rand({4, 3});
  std::vector<std::vector<std::string>> warnings;
  for (const bool typed : {true, false}) {
    SCOPED_TRACE(typed ? "typed" : "boxed");
    at::Tensor out = onDevice(at::zeros({2}));
    const at::Tensor self = onDevice(a);
    warnings.push_back(warningsOf([&] {
      if (typed) {
        viaTyped<at::_ops::sqrt_out>(self, out);
      } else {
        viaBoxed<at::_ops::sqrt_out>(self, out);
      }
    }));
    expectSame(out, a.sqrt());
  }
  ASSERT_EQ(warnings[0].size(), 1U);
  EXPECT_NE(warnings[0][0].find("was resized"), std::string::npos)
      << warnings[0][0];
  EXPECT_EQ(warnings[0], warnings[1]);
}

TEST(EmulateRepresentations, DirectFunctionalsAndTupleResults) {
  // Without a C++ shape function a functional operator runs its own CPU
  // kernel: its results have the CPU's dtypes even where the Meta kernel
  // disagrees (int64 for mse_loss_backward of int32 tensors).
  const at::Tensor grad = at::randint(-3, 3, {2, 3}, at::kInt);
  const at::Tensor input = at::randint(-3, 3, {2, 3}, at::kInt);
  const at::Tensor target = at::randint(-3, 3, {1}, at::kLong);
  const at::Tensor cpu_grad = at::mse_loss_backward(grad, input, target, 1);
  expectSame(viaTyped<at::_ops::mse_loss_backward>(
                 onDevice(grad), onDevice(input), onDevice(target), 1),
             cpu_grad);
  expectSame(viaBoxed<at::_ops::mse_loss_backward>(
                 onDevice(grad), onDevice(input), onDevice(target), 1),
             cpu_grad);

  const at::Tensor a = at::randn({6, 5});
  const at::Tensor index = at::tensor({4, 0, 2}, at::kLong);
  const at::Tensor expected = at::index_select(a, 1, index);
  expectSame(viaTyped<at::_ops::index_select>(onDevice(a), 1, onDevice(index)),
             expected);
  expectSame(viaBoxed<at::_ops::index_select>(onDevice(a), 1, onDevice(index)),
             expected);

  const auto [values, indices] = at::topk(a, 2, 1);
  for (const bool typed : {true, false}) {
    SCOPED_TRACE(typed ? "typed" : "boxed");
    const auto [v, i] = typed ? viaTyped<at::_ops::topk, &shapeTopk>(
                                    onDevice(a), 2, 1, true, true)
                              : viaBoxed<at::_ops::topk, &shapeTopk>(
                                    onDevice(a), 2, 1, true, true);
    expectSame(v, values);
    expectSame(i, indices);
    const auto [m, j] =
        typed
            ? viaTyped<at::_ops::max_dim, &shapeMaxDim>(onDevice(a), 0, false)
            : viaBoxed<at::_ops::max_dim, &shapeMaxDim>(onDevice(a), 0, false);
    expectSame(m, std::get<0>(at::max(a, 0)));
    expectSame(j, std::get<1>(at::max(a, 0)));
  }
}

TEST(EmulateRepresentations, ListsViewsAndDataDependentShapes) {
  const at::Tensor a = at::randn({2, 3});
  const at::Tensor b = at::randn({4, 3});
  const at::Tensor expected = at::cat({a, b}, 0);
  const std::vector<at::Tensor> parts = {onDevice(a), onDevice(b)};
  expectSame(viaTyped<at::_ops::cat, &shapeCat>(at::ITensorListRef(parts), 0),
             expected);
  expectSame(viaBoxed<at::_ops::cat, &shapeCat>(at::ITensorListRef(parts), 0),
             expected);

  const at::Tensor square = at::randn({4, 4});
  const at::Tensor d = onDevice(square);
  for (const at::Tensor& view : {viaTyped<at::_ops::diagonal>(d, 0, 0, 1),
                                 viaBoxed<at::_ops::diagonal>(d, 0, 0, 1)}) {
    // A view of the device tensor, not a copy.
    EXPECT_TRUE(view.is_alias_of(d));
    expectSame(view, square.diagonal());
  }

  const at::Tensor mask = at::tensor({0, 3, 0, 1, 5}, at::kFloat);
  const at::Tensor expected_nonzero = at::nonzero(mask);
  expectSame(viaTyped<at::_ops::nonzero>(onDevice(mask)), expected_nonzero);
  expectSame(viaBoxed<at::_ops::nonzero>(onDevice(mask)), expected_nonzero);
}

TEST(EmulateRepresentations, OneRuleDecidesAndBothFollowIt) {
  // Rule 1: through the out= overload when the registration brings a C++
  // shape function (add, topk through topk.values), or with the shapes an
  // earlier call with the same key gave (Note [Learned shapes]: sqrt and
  // index_select in the fallback); never with the Meta kernel. Rule 3 for
  // in-place, out=, view and data-dependent operators.
  const auto ruleFor = [](const char* name, const char* overload,
                          bool has_shape) {
    return std::make_unique<Rule>(
        c10::Dispatcher::singleton().findSchemaOrThrow(name, overload),
        has_shape);
  };
  EXPECT_TRUE(ruleFor("aten::add", "Tensor", true)->via_out.load());
  EXPECT_TRUE(ruleFor("aten::topk", "", true)->via_out.load());
  EXPECT_TRUE(ruleFor("aten::sqrt", "", true)->via_out.load());
  EXPECT_FALSE(ruleFor("aten::sqrt", "", true)->learns_shapes);
  EXPECT_TRUE(ruleFor("aten::sqrt", "", false)->via_out.load());
  EXPECT_TRUE(ruleFor("aten::sqrt", "", false)->learns_shapes);
  EXPECT_TRUE(ruleFor("aten::index_select", "", false)->via_out.load());
  EXPECT_TRUE(ruleFor("aten::native_batch_norm", "", false)->via_out.load());
  // Not through an out= overload torch generates (tagged `generated`: the
  // functional CPU kernel, then copies into the out= tensors): rule 3 makes
  // the same results without the copies. Such operators still learn their
  // shapes, to be queued.
  EXPECT_FALSE(ruleFor("aten::native_layer_norm", "", false)->via_out.load());
  EXPECT_TRUE(ruleFor("aten::native_layer_norm", "", false)->learns_shapes);
  EXPECT_FALSE(
      ruleFor("aten::native_batch_norm_backward", "", false)->via_out.load());
  // Nothing learned where the results depend on more than the key: random
  // draws, a device argument and CPU tensors by design.
  EXPECT_FALSE(ruleFor("aten::native_dropout", "", false)->learns_shapes);
  EXPECT_FALSE(ruleFor("aten::native_dropout", "", false)->via_out.load());
  EXPECT_FALSE(ruleFor("aten::_to_copy", "", false)->learns_shapes);
  EXPECT_FALSE(ruleFor("aten::empty_like", "", false)->learns_shapes);
  EXPECT_FALSE(ruleFor("aten::add_", "Tensor", true)->via_out.load());
  EXPECT_FALSE(ruleFor("aten::add", "out", true)->via_out.load());
  EXPECT_FALSE(ruleFor("aten::diagonal", "", true)->via_out.load());
  EXPECT_FALSE(ruleFor("aten::nonzero", "", true)->via_out.load());
  EXPECT_FALSE(ruleFor("aten::index", "Tensor", true)->via_out.load());

  // Rule 2: mse_loss.out, given a result in the shape of the meta function,
  // resizes it (it computes the elementwise loss first); the call then runs
  // the operator directly, and so does every later one.
  const at::Tensor a = at::randn({3, 4});
  const at::Tensor b = at::randn({3, 4});
  const at::Tensor expected = at::mse_loss(a, b);
  Rule* rule = makeRule<at::_ops::mse_loss, &shapeMseLoss>();
  torch::jit::Stack stack{onDevice(a), onDevice(b), int64_t{1}};
  runStack(*rule, &stack);
  ASSERT_EQ(stack.size(), 1U);
  expectSame(stack[0].toTensor(), expected);
  EXPECT_FALSE(rule->via_out.load());
  expectSame(
      viaTyped<at::_ops::mse_loss, &shapeMseLoss>(onDevice(a), onDevice(b), 1),
      expected);
}

// Note [Structured loops on the device]: the loop of mul on the device
// tensors and the engine's typed kernel (its CPU kernel on host aliases)
// agree, and the loop ran.
TEST(StructuredLoops, TheLoopAndTheEngineAgree) {
  using Loop = LoopKernel<at::_ops::mul_Tensor,
                          TypedKernel<at::_ops::mul_Tensor, nullptr>>;
  const at::Tensor a = at::randn({5, 6});
  const at::Tensor b = at::randn({6});
  const auto counted = [] {
    for (const auto& [op, calls] : structuredLoopCounts()) {
      if (op == "aten::mul.Tensor") {
        return calls;
      }
    }
    return int64_t{0};
  };
  const int64_t before = counted();
  const at::Tensor looped = Loop::call(onDevice(a), onDevice(b));
  EXPECT_EQ(counted(), before + 1);
  expectSame(looped, at::mul(a, b));
  expectSame(viaTyped<at::_ops::mul_Tensor>(onDevice(a), onDevice(b)),
             at::mul(a, b));
  // A CPU scalar of another dtype: cast, as the CPU's iterator casts it.
  const at::Tensor half = at::scalar_tensor(0.5, at::kDouble);
  expectSame(Loop::call(onDevice(a), half), at::mul(a, half));
  EXPECT_EQ(counted(), before + 2);
  // An int64 tensor with a float one: the engine's CPU kernel casts.
  const at::Tensor n = at::arange(6, at::kLong);
  expectSame(Loop::call(onDevice(a), onDevice(n)), at::mul(a, n));
  EXPECT_EQ(counted(), before + 2);
}

// Why readyForLoop casts CPU scalars (the torch behaviour it works
// around): on a device other than the CPU, TensorIterator leaves a CPU
// scalar operand in its own dtype, for the device's kernel to read as it
// is (CUDA's kernels do), while the CPU's loop reads every operand in the
// common dtype; on the CPU the iterator casts it. Should torch start to
// cast it on every device, the first expectation fails and the cast can
// go.
TEST(StructuredLoops, TheDeviceIteratorLeavesCpuScalarsUncast) {
  const at::Tensor a = at::randn({4});
  const at::Tensor scalar = at::scalar_tensor(2.0, at::kDouble);
  LoopOutput<at::native::structured_mul_out> on_device;
  on_device.meta(onDevice(a), scalar);
  EXPECT_EQ(on_device.common_dtype(), at::kFloat);
  EXPECT_EQ(on_device.dtype(2), at::kDouble);
  EXPECT_TRUE(readyForLoop(on_device));
  EXPECT_EQ(on_device.dtype(2), at::kFloat);
  // The caller's scalar is left as it was.
  EXPECT_EQ(scalar.scalar_type(), at::kDouble);

  struct OnCpu final : at::native::structured_mul_out {
    void set_output_raw_strided(int64_t index, at::IntArrayRef sizes,
                                at::IntArrayRef strides,
                                at::TensorOptions options) override {
      out = strides.empty() ? at::empty(sizes, options)
                            : at::empty_strided(sizes, strides, options);
      structured_mul_out::set_output_raw_strided(index, sizes, strides,
                                                 options);
    }
    const at::Tensor& maybe_get_output(int64_t /*index*/) override {
      return out;
    }
    at::Tensor out;
  } on_cpu;
  on_cpu.meta(a, scalar);
  EXPECT_EQ(on_cpu.dtype(2), at::kFloat);
}

// Note [Kernel results in device memory]: an operator whose results only
// its CPU kernel knows (rule 3; nonzero's shape depends on the data) gets
// them in the device memory the kernel allocated them in, not in a copy,
// with the access guard on (tests/runtime/CMakeLists.txt), on the device
// allocator's books, and equal to the CPU's.
TEST(KernelResults, NewResultsOfACpuKernelStayInDeviceMemory) {
  const at::Tensor a = at::tensor({0.0F, 1.0F, 0.0F, 2.0F, 3.0F}).view({5, 1});
  const at::Tensor da = onDevice(a);
  const auto before = getDeviceAllocator()->getDeviceStats(0);
  const int64_t kept = keptKernelResults();
  const at::Tensor indices = viaTyped<at::_ops::nonzero>(da);
  EXPECT_EQ(keptKernelResults(), kept + 1);
  expectSame(indices, at::nonzero(a));
  EXPECT_EQ(indices.storage().data_ptr().device(), kDevice0);
  EXPECT_GE(getDeviceAllocator()->getDeviceStats(0).allocated_bytes[0].current -
                before.allocated_bytes[0].current,
            static_cast<int64_t>(indices.nbytes()));
}

// An operator whose only out= overload is the one torch generates
// (native_batch_norm_backward.out copies the functional kernel's results)
// runs as rule 3 on an idle stream, its three results the blocks its CPU
// kernel allocated in device memory, at the first call as at the next.
TEST(KernelResults, AGeneratedOutOverloadIsNotUsed) {
  const at::Tensor grad = at::randn({4, 3, 5, 5});
  const at::Tensor input = at::randn({4, 3, 5, 5});
  const at::Tensor weight = at::rand({3}) + 0.5;
  const at::Tensor mean = at::randn({3});
  const at::Tensor invstd = at::rand({3}) + 0.5;
  const std::array<bool, 3> mask{true, true, true};
  const auto expected = at::native_batch_norm_backward(
      grad, input, weight, {}, {}, mean, invstd, true, 1e-5, mask);
  const at::Tensor dgrad = onDevice(grad);
  const at::Tensor dinput = onDevice(input);
  const at::Tensor dweight = onDevice(weight);
  const at::Tensor dmean = onDevice(mean);
  const at::Tensor dinvstd = onDevice(invstd);
  for (int call = 0; call < 2; ++call) {
    const int64_t kept = keptKernelResults();
    const auto got = viaTyped<at::_ops::native_batch_norm_backward>(
        dgrad, dinput, dweight, std::nullopt, std::nullopt, dmean, dinvstd,
        true, 1e-5, mask);
    EXPECT_EQ(keptKernelResults(), kept + 3) << "call " << call;
    expectSame(std::get<0>(got), std::get<0>(expected));
    expectSame(std::get<1>(got), std::get<1>(expected));
    expectSame(std::get<2>(got), std::get<2>(expected));
  }
}

}  // namespace
}  // namespace accgen::runtime::emulate::detail
