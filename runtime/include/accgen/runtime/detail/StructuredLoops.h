// The emulated operators whose CPU kernel is a loop behind a DispatchStub
// run that loop directly on the device tensors (Note [Structured loops on
// the device] in src/emulate/Loops.cpp). Which operators: StructuredLoops.def.
// Not an API: emulate::kernel picks LoopKernel for them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <ATen/ops/add_native.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addcdiv_native.h>
#include <ATen/ops/addcdiv_ops.h>
#include <ATen/ops/addcmul_native.h>
#include <ATen/ops/addcmul_ops.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/exp_native.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/lerp_native.h>
#include <ATen/ops/lerp_ops.h>
#include <ATen/ops/log_native.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/reciprocal_native.h>
#include <ATen/ops/reciprocal_ops.h>
#include <ATen/ops/rsqrt_native.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sigmoid_backward_native.h>
#include <ATen/ops/sigmoid_backward_ops.h>
#include <ATen/ops/sigmoid_native.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/tanh_backward_native.h>
#include <ATen/ops/tanh_backward_ops.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/threshold_backward_native.h>
#include <ATen/ops/threshold_backward_ops.h>

namespace accgen::runtime::emulate::detail {

struct Rule;

/// Which member of its structured group an operator is.
enum class LoopForm : uint8_t { kFunctional, kInPlace, kOut };

/// The structured class of `Op` when its loop runs on the device tensors,
/// and which form `Op` is.
template <class Op>
struct StructuredLoop {
  static constexpr bool kRuns = false;
};

#define ACCGEN_LOOP_TRAIT(ops, kernel, form) \
  template <>                                \
  struct StructuredLoop<at::_ops::ops> {     \
    static constexpr bool kRuns = true;      \
    static constexpr LoopForm kForm = form;  \
    using Kernel = at::native::kernel;       \
  };
#define ACCGEN_LOOP(ops, kernel) \
  ACCGEN_LOOP_TRAIT(ops, kernel, LoopForm::kFunctional)
#define ACCGEN_LOOP_INPLACE(ops, kernel) \
  ACCGEN_LOOP_TRAIT(ops, kernel, LoopForm::kInPlace)
#define ACCGEN_LOOP_OUT(ops, kernel) \
  ACCGEN_LOOP_TRAIT(ops, kernel, LoopForm::kOut)
#include "accgen/runtime/detail/StructuredLoops.def"
#undef ACCGEN_LOOP_TRAIT

/// Whether a loop may run directly now: the host computes on device memory
/// and no graph is being captured (Loops.cpp).
bool loopsRunNow() noexcept;

/// After meta(): whether the iterator's loop may run on its operands as
/// they are, after CPU scalars of another dtype were cast to the common
/// one, as the CPU's iterator casts them; and whether the work is small
/// (Loops.cpp).
bool readyForLoop(at::TensorIteratorBase& iter);

/// The count of `op`'s calls that ran their loop directly, registered for
/// emulate::structuredLoopCounts() (Loops.cpp).
std::atomic<int64_t>& loopCounter(const char* name, const char* overload);

/// After a functional loop ran: the structured class, which is also the
/// CPU kernel of the operator's out= overload, computed into a result of
/// its meta shape, so `rule`'s out= overload keeps the shapes it is given
/// and the engine may queue the operator (Note [Queued operators]) from
/// its first call (Loops.cpp).
void loopKeptShapes(Rule& rule) noexcept;

/// A result of the loop, allocated on the device (Loops.cpp).
at::Tensor allocateLoopResult(at::IntArrayRef sizes, at::IntArrayRef strides,
                              const at::TensorOptions& options);

/// While alive, the DispatchStub entries of the table run their loop at
/// once or decline (declined()) instead of waiting for the stream
/// (Loops.cpp).
class LoopScope {
 public:
  LoopScope() noexcept;
  ~LoopScope();
  LoopScope(const LoopScope&) = delete;
  LoopScope& operator=(const LoopScope&) = delete;
  bool declined() const noexcept { return declined_; }
  void decline() noexcept { declined_ = true; }
  /// The scope of this thread, or null.
  static LoopScope* current() noexcept;

 private:
  LoopScope* outer_;
  bool declined_ = false;
};

/// Signals that meta() wanted what the loop cannot give; the call then runs
/// by the engine's rule, which raises the CPU kernel's own error if any.
struct LoopRefused final : std::exception {};

/// The structured class `Kernel` with its result: allocated on the device
/// where meta() says (the functional form), or the tensor given (`self` of
/// the in-place form, `out` of the out= form), which must keep its shape
/// and dtype: the CPU's check_inplace; an out= tensor the CPU would resize
/// or cast into goes to the engine, which does.
template <class Kernel>
class LoopOutput final : public Kernel {
 public:
  LoopOutput() = default;
  explicit LoopOutput(const at::Tensor& self) : self_(&self) {}

  void set_output_strided(int64_t index, at::IntArrayRef sizes,
                          at::IntArrayRef strides,
                          at::TensorOptions options) override {
    set_output_raw_strided(index, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t index, at::IntArrayRef sizes,
                              at::IntArrayRef strides,
                              at::TensorOptions options) override {
    if (self_ == nullptr) {
      out_ = allocateLoopResult(sizes, strides, options);
    } else if (options.dtype() != self_->dtype() || sizes != self_->sizes() ||
               options.device() != self_->device()) {
      throw LoopRefused();
    }
    Kernel::set_output_raw_strided(index, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t /*index*/) override {
    return self_ != nullptr ? *self_ : out_;
  }
  at::Tensor& result() { return out_; }

 private:
  const at::Tensor* self_ = nullptr;
  at::Tensor out_;
};

/// Runs the loop of `kernel`'s impl after its meta() on `args`; false, with
/// nothing written, when the engine is to run the call instead.
template <class Kernel, class... Args>
bool runLoop(LoopOutput<Kernel>& kernel, const Args&... args) {
  try {
    kernel.meta(args...);
  } catch (const std::exception&) {
    // The engine raises the CPU kernel's own error, with the engine's
    // device checks first (Note [Device misuse]).
    return false;
  }
  if (!readyForLoop(kernel)) {
    return false;
  }
  LoopScope scope;
  kernel.impl(args..., kernel.maybe_get_output(0));
  return !scope.declined();
}

/// The kernel of a StructuredLoop operator: its loop on the device tensors
/// when it may run at once, else the typed engine kernel.
template <class Op, class Fallback, class Schema = typename Op::schema>
struct LoopKernel;
template <class Op, class Fallback, class R, class... Args>
struct LoopKernel<Op, Fallback, R(Args...)> {
  using Kernel = typename StructuredLoop<Op>::Kernel;
  static R call(Args... args) {
    static std::atomic<int64_t>& calls =
        loopCounter(Op::name, Op::overload_name);
    if (loopsRunNow()) {
      constexpr LoopForm kForm = StructuredLoop<Op>::kForm;
      if constexpr (kForm == LoopForm::kInPlace) {
        if (runInPlace(args...)) {
          calls.fetch_add(1, std::memory_order_relaxed);
          return first(args...);
        }
      } else if constexpr (kForm == LoopForm::kOut) {
        auto refs = std::forward_as_tuple(args...);
        at::Tensor& out = std::get<sizeof...(Args) - 1>(refs);
        if (runOut(out, refs,
                   std::make_index_sequence<sizeof...(Args) - 1>{})) {
          calls.fetch_add(1, std::memory_order_relaxed);
          return out;
        }
      } else {
        LoopOutput<Kernel> kernel;
        if (runLoop(kernel, args...)) {
          calls.fetch_add(1, std::memory_order_relaxed);
          loopKeptShapes(Fallback::rule());
          return std::move(kernel.result());
        }
      }
    }
    return Fallback::call(std::forward<Args>(args)...);
  }

 private:
  template <class Self, class... Rest>
  static bool runInPlace(Self& self, const Rest&... rest) {
    LoopOutput<Kernel> kernel(self);
    return runLoop(kernel, self, rest...);
  }
  template <class Refs, std::size_t... I>
  static bool runOut(const at::Tensor& out, const Refs& refs,
                     std::index_sequence<I...> /*inputs*/) {
    LoopOutput<Kernel> kernel(out);
    return runLoop(kernel, std::get<I>(refs)...);
  }
  template <class Self, class... Rest>
  static Self& first(Self& self, const Rest&... /*rest*/) {
    return self;
  }
};

}  // namespace accgen::runtime::emulate::detail
