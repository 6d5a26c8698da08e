// Emulated execution of operators on the device (Note [Emulated execution]
// in docs/operators.md), and the fallbacks of operators a backend does not
// list.
//
// The emulated device's memory is host memory behind a guard, so an
// operator's CPU kernel can run straight on it: every device tensor argument
// is viewed as a CPU tensor over the same bytes, the CPU kernel runs as a
// device kernel on the current stream (with access to exactly those
// allocations), and the results are mapped back: in-place and out= results
// are the device tensors themselves, views stay views of the device storage,
// and new results are either computed into device memory through the
// operator's out= overload or, when it has none, copied once. The
// registration files only say which of the two ways each operator takes;
// kernel starters in user-owned files call the same machinery through
// emulate::call.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/IListRef.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/FunctionRef.h>
#include <torch/library.h>

#include "accgen/runtime/CpuGenerator.h"

namespace accgen::runtime::emulate {

/// Raises the error a device raises for a tensor whose view reaches past the
/// end of its storage (a storage resized to zero or shrunk after the tensor
/// was made), before anything reads or writes through it (Note [Device
/// misuse] in Emulate.cpp).
void checkInBounds(const at::TensorBase& t);

/// The same-device check of one operator's tensor arguments: finish()
/// raises CUDA's "Expected all tensors to be on the same device" when they
/// hold both device tensors and CPU tensors other than 0-dim ones
/// (scalars). The indices of advanced indexing (Tensor?[]) are not added:
/// they may be on the CPU, as on CUDA.
class SameDeviceCheck {
 public:
  void add(const at::Tensor& t);
  void add(const std::optional<at::Tensor>& t);
  void add(const at::ITensorListRef& ts);
  void finish() const;

 private:
  std::optional<c10::Device> device_;
  bool cpu_tensor_ = false;
};

/// SameDeviceCheck over the Tensor and Tensor[] values among `args`.
void checkSameDevice(c10::ArrayRef<c10::IValue> args);

/// A CPU tensor over the same bytes as `device_tensor` (same sizes, strides
/// and storage offset; it owns nothing). Only a kernel running with access
/// to the tensor's allocation may read or write through it.
at::Tensor hostAlias(const at::Tensor& device_tensor);

/// A device tensor on `device` holding a copy of the CPU tensor `host`,
/// with its strides when it is dense (else contiguous): the copy runs on
/// the current stream and owns `host` until it ran.
at::Tensor copyToDevice(at::Tensor host, c10::Device device);

/// A meta tensor with the dtype and geometry (sizes, strides, storage offset
/// and storage size) of `t`, made without a dispatcher call: the input of a
/// Meta kernel that computes a result's shape.
at::Tensor metaTensor(const at::Tensor& t);

/// Marks the process as exiting (Note [Exit with device work in flight] in
/// Emulate.cpp): from now on, a thread other than the caller that reaches a
/// device kernel parks there for good instead of returning. Python's exit
/// calls it before it finalizes.
void beginExit() noexcept;

/// Runs `fn` as a kernel on the current stream of `device`, with access to
/// the allocations that hold `buffers`, and waits for it. An exception
/// thrown by `fn` is rethrown here unchanged; warnings it raised are raised
/// again on the calling thread.
void runOnDevice(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                 c10::function_ref<void()> fn);

/// The device tensors one piece of CPU code reads and writes. Viewing one
/// (`views(t)`) gives its host alias and records its allocation; run()
/// runs the code as a kernel on their device's current stream with access
/// to exactly those allocations, and waits for it (runOnDevice). Undefined
/// tensors and nullopt pass through.
class HostViews {
 public:
  at::Tensor operator()(const at::Tensor& device_tensor);
  std::optional<at::Tensor> operator()(const std::optional<at::Tensor>& t);

  /// Runs `fn` with access to every tensor viewed so far.
  void run(c10::function_ref<void()> fn) const;

  /// The device of the tensors viewed (the current one before any).
  c10::Device device() const;

 private:
  std::vector<const void*> buffers_;
  c10::DeviceIndex device_ = -1;
};

/// The kernel for an operator that writes its arguments or returns views of
/// them (in-place, out=, view operators), or that has no out= overload with
/// a C++ shape function: its CPU kernel runs on the device memory; new
/// results, if any, are copied to the device once.
torch::CppFunction direct();

/// The kernel for a functional operator computed through its out= overload
/// `out_op` ("add.out"): the shapes of its results come from `shape`, a
/// kernel with the operator's signature that returns meta tensors (a call of
/// at::meta::add), or, without one, from the operator's Meta kernel; the
/// results are allocated on the device and the out= overload's CPU kernel
/// writes them in place.
torch::CppFunction viaOut(const char* out_op,
                          std::optional<c10::KernelFunction> shape);

/// viaOut with a typed shape function: viaOut("add.out", TORCH_FN(fn)).
template <class FuncPtr>
requires c10::is_compile_time_function_pointer<FuncPtr>::value
    torch::CppFunction
    viaOut(const char* out_op, FuncPtr shape) {
  return viaOut(out_op, c10::KernelFunction::makeFromUnboxedFunction(shape));
}

/// How often each operator ran through the emulate fallback, by operator
/// name ("aten::lgamma").
std::vector<std::pair<std::string, int64_t>> fallbackCalls();

/// Boxed emulation of `op` on `stack`; `out_op`, when not null, is the out=
/// overload that computes a functional operator's results in place.
void runBoxed(const c10::OperatorHandle& op, const c10::OperatorHandle* out_op,
              torch::jit::Stack* stack);

/// The CPU generators a CPU kernel draws from in place of the device
/// generators among its arguments (Note [Device generators on CPU kernels]
/// in accgen/runtime/CpuGenerator.h); the states go back when it is destroyed.
class HostGenerators {
 public:
  /// Replaces each `Generator?` argument of `schema` on top of `stack` by a
  /// CPU stand-in; None stands for the default generator of `device`.
  void borrow(const c10::FunctionSchema& schema, torch::jit::Stack& stack,
              c10::DeviceIndex device);

 private:
  std::vector<std::unique_ptr<CpuGeneratorScope>> scopes_;
};

namespace detail {
template <class Op>
const c10::OperatorHandle& handleOf() {
  static const c10::OperatorHandle handle =
      c10::Dispatcher::singleton().findSchemaOrThrow(Op::name,
                                                     Op::overload_name);
  return handle;
}

template <class Op, class OutOp>
void boxedCall(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if constexpr (std::is_void_v<OutOp>) {
    runBoxed(op, nullptr, stack);
  } else {
    runBoxed(op, &handleOf<OutOp>(), stack);
  }
}
}  // namespace detail

// --8<-- [start:emulate-call]
/// Calls the emulated implementation of `Op` (an at::_ops:: struct) with
/// unboxed arguments, e.g. from a user kernel that is not written yet:
/// `return emulate::call<at::_ops::add_out>(self, other, alpha, out);`.
/// `OutOp` names the out= overload that computes a functional operator's
/// results in place (its shapes then come from the Meta kernel); leave it
/// void to run the operator itself.
template <class Op, class OutOp = void, class... Args>
decltype(auto) call(Args&&... args) {
  using Schema = typename Op::schema;
  static const auto typed = detail::handleOf<Op>().template typed<Schema>();
  return c10::impl::BoxedKernelWrapper<Schema>::call(
      c10::BoxedKernel::makeFromFunction<&detail::boxedCall<Op, OutOp>>(),
      typed, c10::DispatchKeySet(), std::forward<Args>(args)...);
}
// --8<-- [end:emulate-call]

}  // namespace accgen::runtime::emulate

namespace accgen::runtime {

// --8<-- [start:fallback-functions]
/// The CPU fallback (`fallback: cpu`, and operators of kind `fallback`):
/// at::native::cpu_fallback copies the arguments to the host, runs the CPU
/// kernel and copies the results back; random operators draw from the
/// device's generators. With <PREFIX>_WARN_FALLBACK=1 in the environment it
/// warns once per operator.
void cpuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

/// The emulate fallback (`fallback: emulate`, the default of `accgen init`):
/// the operator's CPU kernel runs on the device memory, as for `emulate`
/// entries (Note [Emulate fallback] in Emulate.cpp): arguments are viewed in
/// place, in-place and out= results are written in place, views stay views
/// of the device tensors, new results are computed into device memory
/// through the operator's out= overload or copied once.
void emulateFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// --8<-- [end:fallback-functions]

/// One operator's calls through one of the fallbacks.
struct FallbackCount {
  std::string op;        ///< "aten::lgamma"
  std::string fallback;  ///< "cpu" or "emulate"
  int64_t calls;
};

/// Every operator that ran through the CPU or the emulate fallback in this
/// process, and how often: what a backend still lacks kernels for.
std::vector<FallbackCount> fallbackCounts();

/// The fallback of `fallback: error`: raises NotImplementedError naming the
/// operator and what to add to specs/operators.yaml.
void notImplementedFallback(const c10::OperatorHandle& op,
                            torch::jit::Stack* stack);

}  // namespace accgen::runtime
