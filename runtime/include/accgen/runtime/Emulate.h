// Emulated execution of operators on the device, and the fallbacks of
// operators a backend does not list.
//
// --8<-- [start:emulated-execution]
// Note [Emulated execution]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// The emulated device's memory is host memory that the emulator keeps
// inaccessible (PROT_NONE) except to kernels that name it (Note [Device
// memory access] in the emulator). An emulated operator therefore needs no
// copies:
//  1. Each device tensor argument is viewed as a CPU tensor over the same
//     bytes: same sizes, strides and storage offset, a non-owning DataPtr
//     (hostAlias). Device tensors that share a storage get aliases that
//     share one host storage, so the CPU kernel's overlap checks
//     (add(x[:4], 1, out=x[2:])) see what the device tensors share and
//     refuse the same things.
//  2. The CPU kernel runs, by redispatching the operator to the CPU key,
//     inside one kernel on the device's current stream, with the
//     allocations of all arguments and results as its buffers (as
//     runOnDevice runs a vendor's CPU code): it runs after the work queued
//     on the stream. On an idle stream the emulator runs it on the calling
//     thread, which is what makes small operators cheap; behind queued
//     work the stream's worker runs it, and the call returns at once where
//     its results are known ahead (Note [Queued operators] in
//     src/emulate/Launch.cpp). The CPU kernel runs below autograd, as the
//     device kernel it replaces would.
//  3. An exception the CPU kernel throws (a shape error, an IndexError for
//     an index out of range) is captured on whichever thread ran the
//     kernel and rethrown on the caller's thread after the launch
//     returned: Python sees the CPU's exception type and message. Warnings
//     it raises are collected there and raised again on the caller's
//     thread, so warnings.catch_warnings sees them.
//  4. Results map back: an in-place or out= result is the device tensor
//     that was passed (the same Python object); a view of an argument
//     becomes a view of the device storage (unfold); a new result is made
//     in device memory, by the out= overload or by the CPU kernel itself
//     (Note [Kernel results in device memory] in src/Allocator.cpp); an
//     out= argument the CPU kernel resized gets the new geometry, and if it
//     had to grow, its bytes move to a grown device storage, copied once.
//  5. Random operators draw from the device's generator: their Generator?
//     argument (or the device's default generator) is replaced by a CPU
//     generator holding its engine's state, and the device generator moves
//     on to its next offset afterwards (Note [Device generators on CPU
//     kernels] in accgen/runtime/CpuGenerator.h, Note [Device generator
//     state] in src/Generator.cpp). torch.<device>.manual_seed therefore
//     makes them reproducible, and the CPU generator plays no part.
// Which way an operator runs (through its out= overload, or on host
// aliases) is decided by one rule for every operator (Note [How an
// emulated operator runs] in src/emulate/Rule.cpp): the registration files
// only name the operator and, where torch has one, its C++ shape function.
// Kernel starters in user-owned files call the same engine through
// emulate::call.
// --8<-- [end:emulated-execution]
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/IListRef.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/FunctionRef.h>
#include <torch/library.h>

#include "accgen/runtime/Runtime.h"

namespace accgen::runtime::emulate {

/// Raises the error a device raises for a tensor whose view reaches past the
/// end of its storage (a storage resized to zero or shrunk after the tensor
/// was made), before anything reads or writes through it (Note [Device
/// misuse] in src/emulate/Aliases.cpp).
void checkInBounds(const at::TensorBase& t);

/// The same-device check of one operator's tensor arguments: finish()
/// raises CUDA's "Expected all tensors to be on the same device" when they
/// hold both device tensors and CPU tensors other than 0-dim ones
/// (scalars); an argument the operator writes (out=) counts whatever its
/// dimensions. The indices of advanced indexing (Tensor?[]) are not added:
/// they may be on the CPU, as on CUDA.
class SameDeviceCheck {
 public:
  void add(const at::Tensor& t, bool written = false);
  void add(const std::optional<at::Tensor>& t);
  void add(const at::ITensorListRef& ts);
  void finish() const;

 private:
  std::optional<c10::Device> device_;
  bool cpu_tensor_ = false;
};

/// SameDeviceCheck over the Tensor and Tensor[] values among `args`, the
/// arguments of `schema` (which says which ones the operator writes).
void checkSameDevice(c10::ArrayRef<c10::IValue> args,
                     const c10::FunctionSchema& schema);

/// A CPU tensor over the same bytes as `device_tensor` (same sizes, strides
/// and storage offset; it owns nothing). Only a kernel running with access
/// to the tensor's allocation may read or write through it.
at::Tensor hostAlias(const at::Tensor& device_tensor);

/// A meta tensor with the dtype and geometry (sizes, strides, storage offset
/// and storage size) of `t`, made without a dispatcher call: the input of a
/// Meta kernel that computes a result's shape.
at::Tensor metaTensor(const at::Tensor& t);

/// A device tensor on `device` holding a copy of the CPU tensor `host`,
/// with its strides when it is dense (else contiguous): the copy runs on
/// the current stream and owns `host` until it ran.
at::Tensor copyToDevice(at::Tensor host, c10::Device device);

/// copyToDevice for several tensors, copied by one kernel: add() allocates
/// each result, launch() queues the copies on the current stream (the
/// kernel owns the CPU tensors until it ran). Results are not to be read
/// before launch().
class DeviceCopies {
 public:
  struct Copy {
    void* device_data;
    at::Tensor host;
    std::size_t nbytes;
  };

  at::Tensor add(at::Tensor host, c10::Device device);
  /// Copies `nbytes` of `host` to `device_data`.
  void addInto(void* device_data, at::Tensor host, std::size_t nbytes);
  void launch();

 private:
  std::vector<Copy> copies_;
  // Host storages whose device blocks add() took, and the device storages
  // that own them now (Note [Kernel results in device memory]).
  std::vector<std::pair<c10::Storage, c10::Storage>> taken_;
};

/// Runs `fn` as a kernel on the current stream of `device`, with access to
/// the allocations that hold `buffers`, and waits for it. An exception
/// thrown by `fn` is rethrown here unchanged; warnings it raised are raised
/// again on the calling thread.
void runOnDevice(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                 c10::function_ref<void()> fn);

/// Queues `fn` as a kernel on the current stream of `device`, with access
/// to the allocations that hold `buffers`, and returns at once, as the
/// emulated operators are queued (Note [Queued operators]): `fn` owns what
/// it runs on (it is copied), runs with the caller's thread-local state,
/// and an exception it throws becomes the stream's sticky error, raised
/// at the next synchronization under the name `what`. Small work (`bytes`
/// at most 1 MiB) on an idle stream runs at once on this thread, and
/// under ACCGEN_LAUNCH_BLOCKING=1 it runs as runOnDevice does: an
/// exception then raises here.
void queueOnDevice(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                   std::size_t bytes, std::function<void()> fn,
                   std::string what);

/// The device tensors one piece of CPU code reads and writes. Viewing one
/// (`views(t)`) gives its host alias and records its allocation; run()
/// runs the code as a kernel on their device's current stream with access
/// to exactly those allocations, and waits for it (runOnDevice). Undefined
/// tensors and nullopt pass through. Where the host cannot address device
/// memory (Note [Host access]), a view is a host copy instead, and run()
/// copies back each one whose bytes the code changed.
class HostViews {
 public:
  at::Tensor operator()(const at::Tensor& device_tensor);
  std::optional<at::Tensor> operator()(const std::optional<at::Tensor>& t);

  /// Runs `fn` with access to every tensor viewed so far.
  void run(c10::function_ref<void()> fn) const;
  /// Queues `fn` with access to every tensor viewed so far (queueOnDevice):
  /// `fn` holds the host views it uses. Where the host cannot address
  /// device memory, as run().
  void queue(std::function<void()> fn, std::string what) const;

  /// The device of the tensors viewed (the current one before any).
  c10::Device device() const;

 private:
  struct Copied {
    at::Tensor device;
    at::Tensor host;
    at::Tensor before;  // the host copy as it came
  };
  std::vector<const void*> buffers_;
  std::vector<Copied> copies_;
  std::size_t bytes_ = 0;
  c10::DeviceIndex device_ = -1;
};

/// The emulated kernel of `Op` (an at::_ops:: struct) for a registration:
/// `m.impl("add.Tensor", emulate::kernel<at::_ops::add_Tensor,
/// &shape_add_Tensor>())`. `Shape`, when given, is the operator's C++ shape
/// function: its signature, returning meta tensors (a call of at::meta::add).
/// How the operator runs is the runtime's decision (Note [How an emulated
/// operator runs]); the kernel is typed, called with the operator's own C++
/// signature, where the engine's typed arguments cover it (Note [Two
/// argument representations] in accgen/runtime/detail/EmulateEngine.h).
template <class Op, auto Shape = nullptr>
torch::CppFunction kernel();

/// The emulated kernel of whatever operator it is registered for, boxed,
/// without a shape function: for hand-written registrations.
torch::CppFunction boxedKernel();

// --8<-- [start:emulate-call]
/// Calls the emulated implementation of `Op` (an at::_ops:: struct), e.g.
/// from a user kernel that is not written yet:
/// `return emulate::call<at::_ops::add_out>(self, other, alpha, out);`.
/// It runs as an emulated operator of the same name would.
template <class Op, class... Args>
decltype(auto) call(Args&&... args);
// --8<-- [end:emulate-call]

/// How often each operator ran through the emulate fallback, by operator
/// name ("aten::lgamma").
std::vector<std::pair<std::string, int64_t>> fallbackCalls();

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
/// the operator's CPU kernel runs on the device memory, exactly as it would
/// for an `emulate` entry of the spec (Note [How an emulated operator
/// runs]): arguments are viewed in place, in-place and out= results are
/// written in place, views stay views of the device tensors, new results
/// are made in device memory (Note [Emulate fallback] in
/// src/emulate/Boxed.cpp).
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

/// The emulated operators that ran ATen's CPU loop directly on the device
/// tensors in this process (Note [Structured loops on the device] in
/// src/emulate/Loops.cpp), and how often: {"aten::mul.Tensor", 12}.
std::vector<std::pair<std::string, int64_t>> structuredLoopCounts();

/// How many new results of CPU kernels became device tensors in the device
/// memory the kernels allocated them in, without a copy, in this process
/// (Note [Kernel results in device memory] in src/Allocator.cpp).
int64_t keptKernelResults();

/// The fallback of `fallback: error`: raises NotImplementedError naming the
/// operator and what to add to specs/operators.yaml.
void notImplementedFallback(const c10::OperatorHandle& op,
                            torch::jit::Stack* stack);

}  // namespace accgen::runtime

// The templates above, and what they need of the engine.
#include "accgen/runtime/detail/EmulateEngine.h"
