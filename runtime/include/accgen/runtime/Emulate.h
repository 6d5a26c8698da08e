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

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/IListRef.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/FunctionRef.h>
#include <c10/util/MaybeOwned.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include "accgen/runtime/CpuGenerator.h"
#include "accgen/runtime/Runtime.h"

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
};

/// A meta tensor with the dtype and geometry (sizes, strides, storage offset
/// and storage size) of `t`, made without a dispatcher call: the input of a
/// Meta kernel that computes a result's shape.
at::Tensor metaTensor(const at::Tensor& t);

/// Marks the process as exiting (Note [Exit with device work in flight] in
/// Emulate.cpp): from now on, a thread other than the caller that reaches a
/// device kernel parks there for good instead of returning. Python's exit
/// calls it before it finalizes. Returns whether threads other than the
/// caller have launched device kernels: the caller then releases the GIL
/// for a moment, so that one waiting for it gets to its next kernel.
bool beginExit() noexcept;

/// For a thread of the runtime's own that hands tensors back to Python
/// (the collectives' completion thread): counts it among the device's
/// threads for beginExit, and parks it for good once the process exits
/// (Note [Exit with device work in flight]), before it drops a reference
/// that would take the GIL while the interpreter finalizes.
void parkIfExitingThread() noexcept;

/// Runs `fn` as a kernel on the current stream of `device`, with access to
/// the allocations that hold `buffers`, and waits for it. An exception
/// thrown by `fn` is rethrown here unchanged; warnings it raised are raised
/// again on the calling thread.
void runOnDevice(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                 c10::function_ref<void()> fn);
/// runOnDevice when the driver can run `fn` on this thread at once, without
/// waiting for the stream (accLaunchIfIdle: nothing is queued on it), and
/// the process is not exiting; returns false, with nothing run, otherwise.
/// For a caller that holds a lock the stream's queued work may take (the
/// GIL).
bool runOnDeviceIfIdle(c10::DeviceIndex device,
                       c10::ArrayRef<const void*> buffers,
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

/// The device tensors of one call and their host aliases. Device tensors
/// that share a storage get aliases that share one host storage, so the CPU
/// kernel's overlap checks see what the device tensors share.
class AliasSet {
 public:
  /// The host alias of `device`; `written`: the kernel may write it.
  /// `borrowed`: `device` outlives the set, which then takes no reference
  /// to it (Note [Unboxed emulation]: no trip through the GIL).
  at::Tensor alias(const at::Tensor& device, bool written,
                   bool borrowed = false);
  /// Gives written arguments the geometry the CPU kernel gave their aliases
  /// (an out= argument it resized), and their bytes when it moved them;
  /// true when it moved one.
  bool reconcileWritten();
  /// The device tensor for a result of the CPU kernel: the argument it is,
  /// a view of the argument it views, or a copy of fresh host memory, which
  /// launchCopies() queues.
  at::Tensor toDevice(const at::Tensor& result);
  /// Queues the copies of the results toDevice() made.
  void launchCopies();
  c10::DeviceIndex device() const { return device_; }
  void setDeviceIfUnset(c10::DeviceIndex device) {
    if (device_ < 0) {
      device_ = device;
    }
  }
  c10::ArrayRef<const void*> buffers() const { return buffers_; }

 private:
  struct Entry {
    c10::MaybeOwned<at::Tensor> device;
    at::Tensor host;
    const void* device_data;
    bool written;
  };

  c10::SmallVector<std::pair<c10::StorageImpl*, c10::Storage>, 4> storages_;
  c10::SmallVector<Entry, 4> entries_;
  c10::SmallVector<const void*, 4> buffers_;
  c10::DeviceIndex device_ = -1;
  DeviceCopies copies_;
};

/// Note [Shape cache] in Emulate.cpp: an operator's result shapes for the
/// last few distinct calls, by a key of its arguments.
class ShapeCache {
 public:
  using Key = c10::SmallVector<int64_t, 32>;
  struct Result {
    c10::SmallVector<int64_t, 5> sizes;
    c10::SmallVector<int64_t, 5> strides;
    c10::ScalarType dtype;
  };
  using Results = c10::SmallVector<Result, 1>;

  bool lookup(const Key& key, Results& out) const;
  void insert(Key key, const Results& results);

 private:
  static constexpr std::size_t kEntries = 8;
  mutable std::mutex mutex_;
  std::vector<std::pair<Key, Results>> entries_;
  std::size_t next_ = 0;
};

/// runOnDevice; `fresh_results`: the kernel writes results allocated for it
/// with their Meta shapes, so a warning that it resized one is dropped.
/// Returns whether it resized one.
bool launchAndWait(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                   c10::function_ref<void()> fn, bool fresh_results);

/// A device tensor of this geometry straight from the device allocator, on
/// the current device (no dispatcher round trip through empty_strided).
at::Tensor allocateResult(at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::ScalarType dtype);
/// The start of every shape key: torch's default dtypes.
void keyDefaults(ShapeCache::Key& key);

// Note [Unboxed emulation]
// The emulated operators a backend registers (its `emulate` entries) run
// through typed kernels: the dispatcher calls them with the operator's own
// C++ signature, and they call the CPU kernel with that signature too
// (at::_ops::X::redispatch). The boxed way (a stack of IValues on the way
// in, and again on the way to the CPU kernel) cost about half a microsecond
// per operator: the stacks, the boxing of every argument and, in torch
// 2.13, two trips through the GIL for each tensor that only Python held,
// since boxing takes a second reference to it (intrusive_ptr increfs the
// PyObject of a TensorImpl whose count goes from 1 to 2). Operators whose
// signature the typed kernels do not cover (generators, devices, lists of
// optional tensors, results other than tensors) keep the boxed kernel.

template <class T>
inline constexpr bool kBoxedOnlyArg =
    std::is_same_v<std::decay_t<T>, std::optional<at::Generator>> ||
    std::is_same_v<std::decay_t<T>, at::Generator> ||
    std::is_same_v<std::decay_t<T>, c10::Device> ||
    std::is_same_v<std::decay_t<T>, std::optional<c10::Device>> ||
    std::is_same_v<std::decay_t<T>, c10::List<std::optional<at::Tensor>>>;

template <class T>
inline constexpr bool kTensorRef =
    std::is_same_v<T, const at::Tensor&> || std::is_same_v<T, at::Tensor&>;

/// Results the typed kernels map back: none, tensors, references to
/// tensor arguments, and tuples of those.
template <class T>
struct TypedReturn
    : std::bool_constant<std::is_void_v<T> || std::is_same_v<T, at::Tensor> ||
                         kTensorRef<T>> {};
template <class... Ts>
struct TypedReturn<std::tuple<Ts...>>
    : std::bool_constant<(
          (std::is_same_v<Ts, at::Tensor> || kTensorRef<Ts>)&&...)> {};

/// New tensor results: a Tensor, or a tuple of them.
template <class T>
struct NewTensors : std::bool_constant<std::is_same_v<T, at::Tensor>> {};
template <class... Ts>
struct NewTensors<std::tuple<Ts...>>
    : std::bool_constant<(std::is_same_v<Ts, at::Tensor> && ...)> {};

/// The signature of the out= overload of a functional operator with
/// arguments Args and results R: the same arguments, then one Tensor& per
/// result, returning references to them.
template <class R, class... Args>
struct OutSchemaOf;
template <class... Args>
struct OutSchemaOf<at::Tensor, Args...> {
  using type = at::Tensor&(Args..., at::Tensor&);
};
template <class... Ts, class... Args>
struct OutSchemaOf<std::tuple<Ts...>, Args...> {
  template <class>
  using Ref = at::Tensor&;
  using type = std::tuple<Ref<Ts>...>(Args..., Ref<Ts>...);
};

/// The host tensors of a Tensor[] argument, passed on as either list type.
struct HostTensors {
  std::vector<at::Tensor> tensors;
  operator at::TensorList() const { return tensors; }
  operator at::ITensorListRef() const {
    return at::ITensorListRef(at::TensorList(tensors));
  }
};

inline bool onDevice(const at::Tensor& t) {
  return t.defined() && t.device().type() == kDeviceType;
}

inline at::Tensor hostArg(AliasSet& aliases, const at::Tensor& t,
                          bool written) {
  return onDevice(t) ? aliases.alias(t, written, /*borrowed=*/true) : t;
}
inline std::optional<at::Tensor> hostArg(AliasSet& aliases,
                                         const std::optional<at::Tensor>& t,
                                         bool written) {
  if (!t.has_value()) {
    return std::nullopt;
  }
  return hostArg(aliases, *t, written);
}
inline HostTensors hostArg(AliasSet& aliases, const at::ITensorListRef& ts,
                           bool written) {
  HostTensors host;
  host.tensors.reserve(ts.size());
  for (const at::Tensor& t : ts) {
    host.tensors.push_back(hostArg(aliases, t, written));
  }
  return host;
}
inline HostTensors hostArg(AliasSet& aliases, at::TensorList ts, bool written) {
  return hostArg(aliases, at::ITensorListRef(ts), written);
}
template <class T>
std::decay_t<T> hostArg(AliasSet& /*aliases*/, const T& value,
                        bool /*written*/) {
  return value;
}

/// A device tensor's stand-in for a shape function (metaTensor); other
/// arguments as they are.
inline at::Tensor metaArg(const at::Tensor& t) {
  return onDevice(t) ? metaTensor(t) : t;
}
inline std::optional<at::Tensor> metaArg(const std::optional<at::Tensor>& t) {
  if (!t.has_value()) {
    return std::nullopt;
  }
  return metaArg(*t);
}
inline HostTensors metaArg(const at::ITensorListRef& ts) {
  HostTensors meta;
  meta.tensors.reserve(ts.size());
  for (const at::Tensor& t : ts) {
    meta.tensors.push_back(metaArg(t));
  }
  return meta;
}
inline HostTensors metaArg(at::TensorList ts) {
  return metaArg(at::ITensorListRef(ts));
}
template <class T>
std::decay_t<T> metaArg(const T& value) {
  return value;
}

/// The same-device check of one argument (Note [Device misuse]).
inline void checkArg(SameDeviceCheck& check, const at::Tensor& t) {
  check.add(t);
}
inline void checkArg(SameDeviceCheck& check,
                     const std::optional<at::Tensor>& t) {
  check.add(t);
}
inline void checkArg(SameDeviceCheck& check, const at::ITensorListRef& ts) {
  check.add(ts);
}
inline void checkArg(SameDeviceCheck& check, at::TensorList ts) {
  check.add(at::ITensorListRef(ts));
}
template <class T>
void checkArg(SameDeviceCheck& /*check*/, const T& /*value*/) {}

/// The device of a call's first device tensor, or -1.
inline void firstDevice(c10::DeviceIndex& device, const at::Tensor& t) {
  if (device < 0 && onDevice(t)) {
    device = t.device().index();
  }
}
inline void firstDevice(c10::DeviceIndex& device,
                        const std::optional<at::Tensor>& t) {
  if (t.has_value()) {
    firstDevice(device, *t);
  }
}
inline void firstDevice(c10::DeviceIndex& device,
                        const at::ITensorListRef& ts) {
  for (const at::Tensor& t : ts) {
    firstDevice(device, t);
  }
}
inline void firstDevice(c10::DeviceIndex& device, at::TensorList ts) {
  firstDevice(device, at::ITensorListRef(ts));
}
template <class T>
void firstDevice(c10::DeviceIndex& /*device*/, const T& /*value*/) {}

/// Appends the Note [Shape cache] key of one argument; false for arguments
/// that are not keyed (the call then always computes its shapes).
bool keyArg(ShapeCache::Key& key, const at::Tensor& t);
bool keyArg(ShapeCache::Key& key, const std::optional<at::Tensor>& t);
bool keyArg(ShapeCache::Key& key, int64_t value);
bool keyArg(ShapeCache::Key& key, double value);
bool keyArg(ShapeCache::Key& key, bool value);
bool keyArg(ShapeCache::Key& key, const c10::SymInt& value);
bool keyArg(ShapeCache::Key& key, at::IntArrayRef values);
bool keyArg(ShapeCache::Key& key, c10::ArrayRef<double> values);
bool keyArg(ShapeCache::Key& key, at::OptionalIntArrayRef values);
bool keyArg(ShapeCache::Key& key, c10::SymIntArrayRef values);
bool keyArg(ShapeCache::Key& key, const at::Scalar& value);
bool keyArg(ShapeCache::Key& key, const std::optional<at::Scalar>& value);
bool keyArg(ShapeCache::Key& key, at::ScalarType value);
bool keyArg(ShapeCache::Key& key, std::optional<at::ScalarType> value);
bool keyArg(ShapeCache::Key& key, std::optional<int64_t> value);
bool keyArg(ShapeCache::Key& key, c10::string_view value);
bool keyArg(ShapeCache::Key& key, std::optional<c10::string_view> value);
template <class T>
bool keyArg(ShapeCache::Key& /*key*/, const T& /*value*/) {
  return false;
}

/// Per-operator facts from its schema, made on first use.
struct TypedPlan {
  std::vector<bool> written;
  bool allows_cpu_tensors = false;
};
TypedPlan typedPlan(const c10::FunctionSchema& schema);

template <class Op>
const TypedPlan& planOf() {
  static const TypedPlan plan = typedPlan(handleOf<Op>().schema());
  return plan;
}

/// planOf<Op>, after the same-device check of a call's arguments (unless
/// the operator takes CPU tensors by design).
template <class Op, class... Args>
const TypedPlan& checkedPlan(const Args&... args) {
  const TypedPlan& plan = planOf<Op>();
  if (!plan.allows_cpu_tensors) {
    SameDeviceCheck check;
    (checkArg(check, args), ...);
    check.finish();
  }
  return plan;
}

/// The shapes of the meta results of a shape function.
inline void collectShapes(const at::Tensor& m, ShapeCache::Results& out) {
  out.push_back({c10::SmallVector<int64_t, 5>(m.sizes()),
                 c10::SmallVector<int64_t, 5>(m.strides()), m.scalar_type()});
}
template <class... Ts>
void collectShapes(const std::tuple<Ts...>& ms, ShapeCache::Results& out) {
  std::apply([&](const auto&... m) { (collectShapes(m, out), ...); }, ms);
}

inline constexpr c10::DispatchKeySet kCpuKeySet{c10::DispatchKey::CPU};

template <class T>
T& pass(T& value) {
  return value;
}

template <class R>
constexpr std::size_t resultCount() {
  if constexpr (std::is_same_v<R, at::Tensor>) {
    return 1;
  } else {
    return std::tuple_size_v<R>;
  }
}

/// A functional operator computed through its out= overload `OutOp` into
/// results allocated with the shapes `Shape` gives: the typed form of
/// viaOut (Note [Unboxed emulation]).
template <class Op, class OutOp, auto Shape, class Schema = typename Op::schema>
struct ViaOutKernel;

template <class Op, class OutOp, auto Shape, class R, class... Args>
struct ViaOutKernel<Op, OutOp, Shape, R(Args...)> {
  static constexpr std::size_t kResults = resultCount<R>();

  static R call(Args... args) {
    const TypedPlan& plan = checkedPlan<Op>(args...);
    static ShapeCache cache;
    ShapeCache::Key key;
    keyDefaults(key);
    const bool keyed = (keyArg(key, args) && ...);
    ShapeCache::Results shapes;
    if (!keyed || !cache.lookup(key, shapes)) {
      std::tuple<decltype(metaArg(args))...> meta{metaArg(args)...};
      collectShapes(
          std::apply([](auto&... m) -> R { return Shape(pass(m)...); }, meta),
          shapes);
      if (keyed) {
        cache.insert(std::move(key), shapes);
      }
    }
    c10::DeviceIndex device = -1;
    (firstDevice(device, args), ...);
    if (device < 0) {
      device = currentDevice();
    }
    const c10::DeviceGuard guard(c10::Device(kDeviceType, device));
    std::array<at::Tensor, kResults> results;
    for (std::size_t i = 0; i < kResults; ++i) {
      results[i] =
          allocateResult(shapes[i].sizes, shapes[i].strides, shapes[i].dtype);
    }
    AliasSet aliases;
    std::tuple<decltype(hostArg(aliases, args, false))...> host{
        hostArg(aliases, args, false)...};
    std::array<at::Tensor, kResults> host_results;
    for (std::size_t i = 0; i < kResults; ++i) {
      host_results[i] =
          aliases.alias(results[i], /*written=*/true, /*borrowed=*/true);
    }
    aliases.setDeviceIfUnset(device);
    launchAndWait(
        aliases.device(), aliases.buffers(),
        [&] {
          std::apply(
              [&](auto&... a) {
                std::apply(
                    [&](auto&... out) {
                      OutOp::redispatch(kCpuKeySet, pass(a)..., out...);
                    },
                    host_results);
              },
              host);
        },
        /*fresh_results=*/true);
    aliases.reconcileWritten();
    if constexpr (kResults == 1) {
      return std::move(results[0]);
    } else {
      return std::apply([](auto&... r) { return R(std::move(r)...); }, results);
    }
  }
};

/// Whether ViaOutKernel covers `Op` through `OutOp` with `Shape`: supported
/// arguments, new tensor results, an out= overload that takes the same
/// arguments and then one Tensor& per result, and a shape function of the
/// operator's own signature.
template <class Op, class OutOp, auto Shape, class Schema = typename Op::schema>
struct ViaOutFits : std::false_type {};
template <class Op, class OutOp, auto Shape, class R, class... Args>
struct ViaOutFits<Op, OutOp, Shape, R(Args...)> {
  static constexpr bool check() {
    if constexpr (!NewTensors<R>::value || (kBoxedOnlyArg<Args> || ...)) {
      return false;
    } else {
      return std::is_same_v<typename OutOp::schema,
                            typename OutSchemaOf<R, Args...>::type> &&
             std::is_same_v<decltype(Shape), R (*)(Args...)>;
    }
  }
  static constexpr bool value = check();
};

/// An operator whose CPU kernel runs on the device memory directly: the
/// typed form of direct() (Note [Unboxed emulation]).
template <class Op, class Schema = typename Op::schema>
struct DirectKernel;

template <class Op, class R, class... Args>
struct DirectKernel<Op, R(Args...)> {
  static R call(Args... args) {
    const TypedPlan& plan = checkedPlan<Op>(args...);
    AliasSet aliases;
    auto host =
        hostArgs(aliases, plan, std::index_sequence_for<Args...>{}, args...);
    aliases.setDeviceIfUnset(currentDevice());
    if constexpr (std::is_void_v<R>) {
      launchAndWait(
          aliases.device(), aliases.buffers(),
          [&] {
            std::apply(
                [&](auto&... a) { Op::redispatch(kCpuKeySet, pass(a)...); },
                host);
          },
          /*fresh_results=*/false);
      aliases.reconcileWritten();
    } else {
      std::optional<Held<R>> result;
      launchAndWait(
          aliases.device(), aliases.buffers(),
          [&] {
            std::apply(
                [&](auto&... a) {
                  result.emplace(Op::redispatch(kCpuKeySet, pass(a)...));
                },
                host);
          },
          /*fresh_results=*/false);
      aliases.reconcileWritten();
      auto device_args = std::forward_as_tuple(args...);
      R mapped = toDevice<R>(aliases, unwrap(*result), host, device_args);
      aliases.launchCopies();
      return mapped;
    }
  }

 private:
  template <class T>
  using Held =
      std::conditional_t<std::is_reference_v<T>,
                         std::reference_wrapper<std::remove_reference_t<T>>, T>;

  template <class T>
  static T& unwrap(std::reference_wrapper<T> ref) {
    return ref.get();
  }
  template <class T>
  static T& unwrap(T& value) {
    return value;
  }

  template <std::size_t... I>
  static auto hostArgs(AliasSet& aliases, const TypedPlan& plan,
                       std::index_sequence<I...> /*indices*/,
                       const std::remove_reference_t<Args>&... args) {
    return std::tuple<decltype(hostArg(aliases, args, false))...>{
        hostArg(aliases, args, I < plan.written.size() && plan.written[I])...};
  }

  // The argument whose host alias `host_result` is: what a Tensor& result
  // refers to on the device.
  template <class Host, class Device>
  static at::Tensor& argumentOf(const at::Tensor& host_result, Host& host,
                                Device& device_args) {
    at::Tensor* found = nullptr;
    matchArgument(host_result, host, device_args, found,
                  std::index_sequence_for<Args...>{});
    TORCH_INTERNAL_ASSERT(found != nullptr, Op::name,
                          " returned a reference to no argument");
    return *found;
  }
  template <class Host, class Device, std::size_t... I>
  static void matchArgument(const at::Tensor& host_result, Host& host,
                            Device& device_args, at::Tensor*& found,
                            std::index_sequence<I...> /*indices*/) {
    auto one = [&](auto index) {
      constexpr std::size_t i = decltype(index)::value;
      using A = std::tuple_element_t<i, std::tuple<Args...>>;
      if constexpr (kTensorRef<A>) {
        if (found == nullptr && std::get<i>(host).unsafeGetTensorImpl() ==
                                    host_result.unsafeGetTensorImpl()) {
          // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
          found = const_cast<at::Tensor*>(&std::get<i>(device_args));
        }
      }
    };
    (one(std::integral_constant<std::size_t, I>{}), ...);
  }

  template <class T, class V, class Host, class Device>
  static T toDeviceOne(AliasSet& aliases, const V& value, Host& host,
                       Device& device_args) {
    if constexpr (std::is_same_v<T, at::Tensor>) {
      return aliases.toDevice(value);
    } else {
      return argumentOf(value, host, device_args);
    }
  }

  template <class T, class V, class Host, class Device>
  static T toDevice(AliasSet& aliases, const V& value, Host& host,
                    Device& device_args) {
    if constexpr (std::is_same_v<T, at::Tensor> || kTensorRef<T>) {
      return toDeviceOne<T>(aliases, value, host, device_args);
    } else {
      return toDeviceTuple<T>(aliases, value, host, device_args,
                              std::make_index_sequence<std::tuple_size_v<T>>{});
    }
  }
  template <class T, class V, class Host, class Device, std::size_t... I>
  static T toDeviceTuple(AliasSet& aliases, const V& value, Host& host,
                         Device& device_args,
                         std::index_sequence<I...> /*indices*/) {
    return T(toDeviceOne<std::tuple_element_t<I, T>>(
        aliases, std::get<I>(value), host, device_args)...);
  }
};

template <class Op, class Schema = typename Op::schema>
struct DirectFits : std::false_type {};
template <class Op, class R, class... Args>
struct DirectFits<Op, R(Args...)>
    : std::bool_constant<TypedReturn<R>::value &&
                         !(kBoxedOnlyArg<Args> || ...)> {};

template <class Op, class OutOp>
void boxedCall(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if constexpr (std::is_void_v<OutOp>) {
    runBoxed(op, nullptr, stack);
  } else {
    runBoxed(op, &handleOf<OutOp>(), stack);
  }
}
}  // namespace detail

/// viaOut for the at::_ops structs of the operator (`Op`) and of its out=
/// overload (`OutOp`, named `out_op`), with the shape function `Shape`:
/// a typed kernel (Note [Unboxed emulation]) where the signature allows
/// one, else the boxed kernel.
template <class Op, class OutOp, auto Shape>
torch::CppFunction viaOut(const char* out_op) {
  using Schema = typename Op::schema;
  if constexpr (detail::ViaOutFits<Op, OutOp, Shape, Schema>::value) {
    return torch::CppFunction(
        c10::CompileTimeFunctionPointer<
            Schema, &detail::ViaOutKernel<Op, OutOp, Shape, Schema>::call>());
  } else {
    return viaOut(out_op, c10::CompileTimeFunctionPointer<
                              std::remove_pointer_t<decltype(Shape)>, Shape>());
  }
}

/// direct() for the at::_ops struct of the operator: a typed kernel (Note
/// [Unboxed emulation]) where the signature allows one, else the boxed one.
template <class Op>
torch::CppFunction direct() {
  using Schema = typename Op::schema;
  if constexpr (detail::DirectFits<Op, Schema>::value) {
    return torch::CppFunction(
        c10::CompileTimeFunctionPointer<
            Schema, &detail::DirectKernel<Op, Schema>::call>());
  } else {
    return direct();
  }
}

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
