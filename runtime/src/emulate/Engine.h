// What the files of the emulation engine share (runtime/src/emulate/).
// Which job each does: accgen/runtime/detail/EmulateEngine.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/FunctionRef.h>
#include <c10/util/SmallVector.h>

#include "accgen/runtime/Emulate.h"

namespace accgen::runtime::emulate::detail {

/// How the engine treats one argument of a schema.
enum class ArgKind : uint8_t {
  kOther,
  kTensor,
  kTensorList,
  kOptionalTensorList,
  kGenerator,
  kDevice,
};

/// One call's arguments, in either representation.
class Call {
 public:
  /// The same-device check of the tensor arguments.
  virtual void checkSameDevice() const = 0;
  /// The device of the first device tensor (or device) argument, or -1.
  virtual c10::DeviceIndex device() const = 0;
  /// The Note [Shape cache] key of the arguments; false when one is not
  /// keyed.
  virtual bool key(ShapeCache::Key& key) const = 0;
  /// The results' shapes, from the operator's shape function.
  virtual void shapes(ShapeCache::Results& out) = 0;
  /// Host aliases of the arguments, recorded in `aliases`, for the CPU
  /// kernels that follow.
  virtual void alias(AliasSet& aliases) = 0;
  /// The operator's CPU kernel on the host aliases.
  virtual void runCpu() = 0;
  /// The out= overload's CPU kernel on the host aliases, writing `outs`.
  virtual void runCpuOut(c10::ArrayRef<at::Tensor> outs) = 0;
  /// The results of runCpu() on the device.
  virtual void mapResults(AliasSet& aliases) = 0;
  /// `results`, computed through the out= overload, are the results.
  virtual void takeResults(c10::ArrayRef<at::Tensor> results) = 0;
  /// The arguments the results are (Rule::returned_argument) are the
  /// results, before the kernel ran.
  virtual void takeArguments(c10::ArrayRef<int> returned) = 0;
  /// After alias(): the arguments as the CPU kernel takes them, boxed onto
  /// `stack`, which then owns them (for a kernel queued on the device).
  virtual void hostStack(torch::jit::Stack& stack) = 0;

 protected:
  Call() = default;
  ~Call() = default;
  Call(const Call&) = default;
  Call& operator=(const Call&) = default;
};

/// Runs `call` as the rule says (Note [How an emulated operator runs]).
void run(Rule& rule, Call& call);

// Note [How an emulated operator runs] (Rule.cpp).
struct Rule {
  Rule(const c10::OperatorHandle& op, bool has_shape_function);
  Rule(const Rule&) = delete;
  Rule& operator=(const Rule&) = delete;

  c10::OperatorHandle op;
  // The schema's facts.
  std::vector<ArgKind> kinds;
  std::vector<bool> written;
  bool has_generator = false;
  // What the operator's results are.
  enum class Results : uint8_t {
    kArguments,  // written arguments only (in-place, out=), or nothing
    kViews,      // views of arguments only
    kOther,      // anything else: new tensors, lists, scalars, mixtures
  };
  Results results = Results::kOther;
  // kArguments: the argument index of each result.
  std::vector<int> returned_argument;
  // Copies between devices and tensor_split take CPU tensors by design.
  bool allows_cpu_tensors = false;
  // A random operator that draws from the default generator.
  bool random_without_generator = false;

  // Functional, with new tensors for results whose shapes do not depend
  // on the data.
  bool functional = false;
  // The out= overload that computes the operator (when it qualifies): it
  // takes the operator's arguments, then one out= argument per result.
  std::optional<c10::OperatorHandle> out;
  // The registration brings a C++ shape function.
  bool has_shape_function = false;
  // Without a shape function, the shapes are those of the results of an
  // earlier call with the same key: for rule 1, or to queue rule 3 (Note
  // [Learned shapes]).
  bool learns_shapes = false;
  // Its results depend on its key alone: it may learn its shapes.
  bool may_learn = false;
  // The boxed representation's shape function, when there is one.
  std::optional<c10::KernelFunction> shape;
  // Cleared for good when the out= kernel resized a result it was given.
  std::atomic<bool> via_out{false};
  // Set then, for an operator that may learn: its shape function gives
  // shapes its CPU kernel does not keep (mse_loss's reduction), so from
  // then on it learns them as an operator without one (Note [Learned
  // shapes]).
  std::atomic<bool> learns_after_resize{false};
  // Set once the out= kernel ran without resizing a result: from then on
  // it may be queued (Note [Queued operators]).
  std::atomic<bool> out_proven{false};
  ShapeCache shapes;
  // Calls through the emulate fallback (fallbackCalls()).
  std::atomic<int64_t> fallback_calls{0};
};

/// Runs `fn` as a kernel on the current stream of `device` with access to
/// `buffers`, and waits for it (Launch.cpp); `fresh_results`: the kernel
/// writes results allocated for it with their meta shapes, and a warning
/// that it resized one is dropped. Returns whether it resized one. `op`,
/// when given, names the operator if a graph capture refuses the launch.
bool launchAndWait(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                   c10::function_ref<void()> fn, bool fresh_results,
                   const c10::OperatorHandle* op = nullptr);

/// Runs `fn` on this thread at once, as launchAndWait would, if the stream
/// is idle (accLaunchIfIdle) and the process is not exiting; false, with
/// nothing run, otherwise. `resized` as launchAndWait returns it.
bool launchIfIdle(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                  c10::function_ref<void()> fn, bool fresh_results,
                  bool& resized);

/// One operator's CPU kernel queued on a stream (Note [Queued operators]):
/// it owns what it runs on.
struct QueuedKernel {
  explicit QueuedKernel(c10::OperatorHandle handle) : op(std::move(handle)) {}
  /// The overload to run (the operator, or its out= overload) and its
  /// arguments, host aliases in place of device tensors.
  c10::OperatorHandle op;
  torch::jit::Stack stack;
  /// Host aliases the kernel writes in place: it must keep their geometry
  /// and bytes (an out= kernel that resized one would leave the device
  /// tensor behind).
  struct Written {
    at::Tensor host;
    const void* data;
    c10::SmallVector<int64_t, 5> sizes;
    c10::SmallVector<int64_t, 5> strides;
  };
  c10::SmallVector<Written, 2> written;
  /// A functional kernel's results go to these host aliases of results
  /// allocated on the device, which they must match in shape and dtype.
  c10::SmallVector<at::Tensor, 2> results;
};

/// Queues `kernel` on the current stream of `device` with access to
/// `buffers`; returns at once. An error it raises surfaces at the stream's
/// next synchronization, with its message (Note [Queued operators]).
void launchQueued(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                  std::unique_ptr<QueuedKernel> kernel);

/// Queues `fn`, which owns what it runs on, as launchQueued queues a
/// kernel; `what` names it in the error it may raise.
void launchQueuedFunction(c10::DeviceIndex device,
                          c10::ArrayRef<const void*> buffers,
                          std::function<void()> fn, std::string what);

/// Whether operators may be queued: false under ACCGEN_LAUNCH_BLOCKING=1.
bool queueingAllowed();

/// Raises on this thread the warnings of queued kernels that ran since.
void raiseDeferredWarnings();

/// Work of at most this many bytes on an idle stream runs at once.
inline constexpr std::size_t kInlineBytes = std::size_t{1} << 20;

/// Runs the boxed call on top of `stack` by `rule` (Boxed.cpp).
void runStack(Rule& rule, torch::jit::Stack* stack);

/// The rule of `op` among those of the fallback and of boxed registrations
/// without a shape function, made on first use (Boxed.cpp).
Rule& ruleOf(const c10::OperatorHandle& op);

}  // namespace accgen::runtime::emulate::detail
