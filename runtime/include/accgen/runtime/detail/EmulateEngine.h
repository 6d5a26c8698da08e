// The emulation engine's internals that templates and the runtime's other
// parts need. Not an API: a vendor calls what accgen/runtime/Emulate.h
// declares. Where each job lives in runtime/src/emulate/:
//   Engine.h     what the engine's files share: Call, Rule, the launches
//   Rule.cpp     what the engine knows of an operator, and how it runs
//   Engine.cpp   the one algorithm (run), the shape cache and its keys
//   Aliases.cpp  host aliases of device tensors, results back to the device
//   Launch.cpp   kernels on the device's streams, queued operators,
//                warnings, exit
//   Typed.cpp    the typed representation: the Call over TypedArgs
//   Boxed.cpp    the boxed representation, the emulate fallback
//   Loops.cpp    structured loops on the device tensors (rule 0)
// and in this directory:
//   EmulateEngine.h    this file: the typed representation (TypedKernel,
//                      instantiated per operator), the shape cache, the
//                      alias set
//   StructuredLoops.def  the table of rule 0's operators and their stubs
//   StructuredLoops.h  rule 0's kernel (LoopKernel), for the operators of
//                      the table
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/IListRef.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/FunctionRef.h>
#include <c10/util/MaybeOwned.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include "accgen/runtime/Runtime.h"
#include "accgen/runtime/detail/StructuredLoops.h"

namespace accgen::runtime::emulate {

// Used by the runtime's other parts (the Python module, the collectives).

/// Marks the process as exiting (Note [Exit with device work in flight] in
/// src/emulate/Launch.cpp): from now on, a thread other than the caller that
/// reaches a device kernel parks there for good instead of returning.
/// Python's exit calls it before it finalizes. Returns whether threads
/// other than the caller have launched device kernels: the caller then
/// releases the GIL for a moment, so that one waiting for it gets to its
/// next kernel.
bool beginExit() noexcept;

/// For a thread of the runtime's own that hands tensors back to Python
/// (the collectives' completion thread): counts it among the device's
/// threads for beginExit, and parks it for good once the process exits
/// (Note [Exit with device work in flight]), before it drops a reference
/// that would take the GIL while the interpreter finalizes.
void parkIfExitingThread() noexcept;

/// runOnDevice when the driver can run `fn` on this thread at once, without
/// waiting for the stream (accLaunchIfIdle: nothing is queued on it), and
/// the process is not exiting; returns false, with nothing run, otherwise.
/// For a caller that holds a lock the stream's queued work may take (the
/// GIL).
bool runOnDeviceIfIdle(c10::DeviceIndex device,
                       c10::ArrayRef<const void*> buffers,
                       c10::function_ref<void()> fn);

/// The CPU generators a CPU kernel draws from in place of the device
/// generators among its arguments (Note [Device generators on CPU kernels]
/// in accgen/runtime/CpuGenerator.h); the states go back when it is
/// destroyed.
class HostGenerators {
 public:
  HostGenerators();
  ~HostGenerators();
  HostGenerators(const HostGenerators&) = delete;
  HostGenerators& operator=(const HostGenerators&) = delete;

  /// Replaces each `Generator?` argument of `schema` on top of `stack` by a
  /// CPU stand-in; None stands for the default generator of `device`.
  void borrow(const c10::FunctionSchema& schema, torch::jit::Stack& stack,
              c10::DeviceIndex device);

 private:
  struct Scopes;
  std::unique_ptr<Scopes> scopes_;
};

namespace detail {

/// Note [Shape cache] in src/emulate/Engine.cpp: an operator's result
/// shapes for the last few distinct calls, by a key of its arguments.
class ShapeCache {
 public:
  using Key = c10::SmallVector<int64_t, 32>;
  struct Result {
    c10::SmallVector<int64_t, 5> sizes;
    c10::SmallVector<int64_t, 5> strides;
    c10::ScalarType dtype;
  };
  using Results = c10::SmallVector<Result, 1>;

  /// Keeps the last `entries` distinct keys.
  explicit ShapeCache(std::size_t entries = 8) : entries_limit_(entries) {}

  bool lookup(const Key& key, Results& out) const;
  void insert(Key key, const Results& results);
  void clear();

 private:
  std::size_t entries_limit_;
  mutable std::mutex mutex_;
  std::vector<std::pair<Key, Results>> entries_;
  std::size_t next_ = 0;
};

/// The device tensors of one call and their host aliases. Device tensors
/// that share a storage get aliases that share one host storage, so the CPU
/// kernel's overlap checks see what the device tensors share.
class AliasSet {
 public:
  /// The host alias of `device`; `written`: the kernel may write it.
  /// `borrowed`: `device` outlives the set, which then takes no reference
  /// to it (no trip through the GIL for a tensor only Python holds).
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
  /// From now on, toDevice() keeps the shapes of the results it copies
  /// (Note [Learned shapes]).
  void recordFreshShapes() { recording_ = true; }
  /// While recording: the shapes of the results toDevice() was given, when
  /// every one of them was fresh host memory it copied; else nullptr.
  const ShapeCache::Results* freshResults() const {
    return recording_ && mapped_ != 0 && fresh_.size() == mapped_ ? &fresh_
                                                                  : nullptr;
  }
  c10::DeviceIndex device() const { return device_; }
  void setDeviceIfUnset(c10::DeviceIndex device) {
    if (device_ < 0) {
      device_ = device;
    }
  }
  c10::ArrayRef<const void*> buffers() const { return buffers_; }
  /// The bytes of the tensors aliased so far.
  std::size_t bytes() const { return bytes_; }
  /// Calls `fn` with each written argument's host alias and the device
  /// bytes it was made over.
  void forEachWritten(
      c10::function_ref<void(const at::Tensor& host, const void* data)> fn)
      const {
    for (const Entry& e : entries_) {
      if (e.written) {
        fn(e.host, e.device_data);
      }
    }
  }

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
  // Whether InferenceMode is on, asked once (-1: not yet).
  int8_t inference_ = -1;
  std::size_t bytes_ = 0;
  DeviceCopies copies_;
  // While recording, the results toDevice() was given, and the shapes of
  // those it copied.
  bool recording_ = false;
  std::size_t mapped_ = 0;
  ShapeCache::Results fresh_;
};

/// The start of every shape key: torch's default dtypes (Engine.cpp).
void keyDefaults(ShapeCache::Key& key);

/// A device tensor of this geometry straight from the device allocator, on
/// the current device (Aliases.cpp).
at::Tensor allocateResult(at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::ScalarType dtype);

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
bool keyArg(ShapeCache::Key& key, std::optional<double> value);
bool keyArg(ShapeCache::Key& key, std::optional<bool> value);
bool keyArg(ShapeCache::Key& key, const std::optional<c10::SymInt>& value);
bool keyArg(ShapeCache::Key& key, at::OptionalArrayRef<double> values);
bool keyArg(ShapeCache::Key& key, at::OptionalSymIntArrayRef values);
bool keyArg(ShapeCache::Key& key, at::MemoryFormat value);
bool keyArg(ShapeCache::Key& key, std::optional<at::MemoryFormat> value);
bool keyArg(ShapeCache::Key& key, at::Layout value);
bool keyArg(ShapeCache::Key& key, std::optional<at::Layout> value);
/// A bool list (bool[3] output_mask).
bool keyBools(ShapeCache::Key& key, c10::ArrayRef<bool> values);
template <std::size_t N>
bool keyArg(ShapeCache::Key& key, const std::array<bool, N>& values) {
  return keyBools(key, values);
}
template <class T>
bool keyArg(ShapeCache::Key& /*key*/, const T& /*value*/) {
  return false;
}

/// The shapes of the meta results of a shape computation.
void collectShapes(const at::Tensor& meta, ShapeCache::Results& out);
template <class... Ts>
void collectShapes(const std::tuple<Ts...>& metas, ShapeCache::Results& out) {
  std::apply([&](const auto&... m) { (collectShapes(m, out), ...); }, metas);
}

/// What the engine knows of one operator, and how it runs it (Note [How an
/// emulated operator runs] in src/emulate/Rule.cpp). Made once per
/// operator and kept for the life of the process.
struct Rule;

/// The rule of `op` for a typed kernel; `has_shape_function`: the kernel
/// brings the operator's C++ shape function.
Rule& typedRule(const c10::OperatorHandle& op, bool has_shape_function);

/// Whether the engine runs `rule`'s operator through host aliases: always
/// where the host computes, and for views (which read no data) everywhere
/// (Note [Host access]).
bool runsOnHostAliases(const Rule& rule) noexcept;

// Note [Two argument representations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The engine runs one algorithm (run, in src/emulate/Engine.cpp) over one
// call's arguments, whatever their representation: a stack of IValues
// (boxed calls: the fallbacks, and operators whose signature the typed
// representation does not cover: generators, devices, lists of optional
// tensors, results other than tensors) or the operator's own C++
// parameters (typed calls: TypedKernel below, and src/emulate/Typed.cpp).
// A typed call costs about half a microsecond less: no stacks, no boxing of
// each argument and, in torch 2.13, no two trips through the GIL for each
// tensor that only Python held, since boxing takes a second reference to
// it. A representation answers the algorithm's questions about the
// arguments and runs the CPU kernels on their host aliases; it decides
// nothing. A test runs operators through both and compares
// (tests/runtime/emulate_test.cpp).

/// The boxed kernel of an operator: run() over the stack.
void runBoxed(const c10::OperatorHandle& op, torch::jit::Stack* stack);
/// The boxed kernel of an operator with a C++ shape function.
torch::CppFunction boxedKernel(c10::KernelFunction shape);

inline bool onDevice(const at::Tensor& t) {
  return t.defined() && t.device().type() == kDeviceType;
}

template <class Op>
const c10::OperatorHandle& handleOf() {
  static const c10::OperatorHandle handle =
      c10::Dispatcher::singleton().findSchemaOrThrow(Op::name,
                                                     Op::overload_name);
  return handle;
}

// The typed representation.

template <class T>
inline constexpr bool kTensorRef =
    std::is_same_v<T, const at::Tensor&> || std::is_same_v<T, at::Tensor&>;

/// Arguments the typed representation does not take: generators, devices
/// and lists of optional tensors (boxed calls handle them).
template <class T>
inline constexpr bool kBoxedOnlyArg =
    std::is_same_v<std::decay_t<T>, std::optional<at::Generator>> ||
    std::is_same_v<std::decay_t<T>, at::Generator> ||
    std::is_same_v<std::decay_t<T>, c10::Device> ||
    std::is_same_v<std::decay_t<T>, std::optional<c10::Device>> ||
    std::is_same_v<std::decay_t<T>, c10::List<std::optional<at::Tensor>>>;

/// Results it maps back: none, tensors, references to tensor arguments,
/// and tuples of those.
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

template <class Schema>
struct TypedFits : std::false_type {};
template <class R, class... Args>
struct TypedFits<R(Args...)>
    : std::bool_constant<TypedReturn<R>::value &&
                         !(kBoxedOnlyArg<Args> || ...)> {};

/// The signature of the out= overload of a functional operator with
/// arguments Args and results R: the same arguments, then one Tensor& per
/// result, returning references to them.
template <class R, class... Args>
struct OutSchemaOf {
  using type = void;
};
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

/// Device tensors replaced by their host aliases, for the CPU kernel.
at::Tensor hostArg(AliasSet& aliases, const at::Tensor& t, bool written);
std::optional<at::Tensor> hostArg(AliasSet& aliases,
                                  const std::optional<at::Tensor>& t,
                                  bool written);
HostTensors hostArg(AliasSet& aliases, const at::ITensorListRef& ts,
                    bool written);

/// Device tensors replaced by meta tensors of their geometry, for a shape
/// computation.
at::Tensor metaArg(const at::Tensor& t);
std::optional<at::Tensor> metaArg(const std::optional<at::Tensor>& t);
HostTensors metaArg(const at::ITensorListRef& ts);

/// Sets `device` to that of `t` if it is unset and `t` is a device tensor.
void firstDevice(c10::DeviceIndex& device, const at::Tensor& t);
void firstDevice(c10::DeviceIndex& device, const std::optional<at::Tensor>& t);

inline constexpr c10::DispatchKeySet kCpuKeySet{c10::DispatchKey::CPU};
inline constexpr c10::DispatchKeySet kMetaKeySet{c10::DispatchKey::Meta};

// The typed representation erases each argument's C++ type to a TypedArg:
// what kind of value it is and where it is. The engine's side of it
// (src/emulate/Typed.cpp) is written once; what each operator instantiates
// (TypedKernel below) is only its calls with the operator's own signature:
// the CPU kernel, the out= overload's, the shape function, and the mapping
// of its results.

enum class TypedKind : uint8_t {
  kValue,           // anything but tensors: passed on as it is
  kTensor,          // const Tensor&, Tensor&
  kOptionalTensor,  // const std::optional<Tensor>&
  kTensorListRef,   // const ITensorListRef&
  kTensorList,      // TensorList
};

struct TypedArg {
  TypedKind kind;
  const void* value;
  /// The Note [Shape cache] key of a kValue; null: not keyed.
  bool (*key)(ShapeCache::Key& key, const void* value);
};

template <class T>
bool keyErased(ShapeCache::Key& key, const void* value) {
  return keyArg(key, *static_cast<const T*>(value));
}

template <class A>
TypedArg typedArg(const A& value) {
  using T = std::decay_t<A>;
  if constexpr (std::is_same_v<T, at::Tensor>) {
    return {TypedKind::kTensor, &value, nullptr};
  } else if constexpr (std::is_same_v<T, std::optional<at::Tensor>>) {
    return {TypedKind::kOptionalTensor, &value, nullptr};
  } else if constexpr (std::is_same_v<T, at::ITensorListRef>) {
    return {TypedKind::kTensorListRef, &value, nullptr};
  } else if constexpr (std::is_same_v<T, at::TensorList>) {
    return {TypedKind::kTensorList, &value, nullptr};
  } else {
    return {TypedKind::kValue, &value, &keyErased<T>};
  }
}

/// One argument as the CPU kernel gets it (alias() of the engine's typed
/// call fills it): `tensor` for Tensor and Tensor?, `list` for Tensor[].
struct HostValue {
  std::optional<at::Tensor> tensor;
  HostTensors list;
};

/// An argument of type A for the CPU kernel.
template <class A>
decltype(auto) hostValue(const TypedArg& arg, HostValue& host) {
  using T = std::decay_t<A>;
  if constexpr (std::is_same_v<T, at::Tensor>) {
    return static_cast<at::Tensor&>(*host.tensor);
  } else if constexpr (std::is_same_v<T, std::optional<at::Tensor>>) {
    return static_cast<std::optional<at::Tensor>&>(host.tensor);
  } else if constexpr (std::is_same_v<T, at::ITensorListRef>) {
    return at::ITensorListRef(at::TensorList(host.list.tensors));
  } else if constexpr (std::is_same_v<T, at::TensorList>) {
    return at::TensorList(host.list.tensors);
  } else {
    return static_cast<const T&>(*static_cast<const T*>(arg.value));
  }
}

/// An argument of type A for a shape computation.
template <class A>
decltype(auto) metaValue(const TypedArg& arg) {
  using T = std::decay_t<A>;
  if constexpr (std::is_same_v<T, at::Tensor> ||
                std::is_same_v<T, std::optional<at::Tensor>> ||
                std::is_same_v<T, at::ITensorListRef>) {
    return metaArg(*static_cast<const T*>(arg.value));
  } else if constexpr (std::is_same_v<T, at::TensorList>) {
    return metaArg(at::ITensorListRef(*static_cast<const T*>(arg.value)));
  } else {
    return static_cast<const T&>(*static_cast<const T*>(arg.value));
  }
}

/// The argument a Tensor& result refers to: the Tensor argument whose host
/// alias it is.
at::Tensor& argumentFor(const TypedArg* args, const HostValue* host,
                        std::size_t count, const at::Tensor& host_result,
                        const char* op);

/// What an operator's typed kernel gives the engine (TypedKernel).
struct TypedOps {
  void (*shapes)(const TypedArg* args, ShapeCache::Results& out);
  void (*run_cpu)(const TypedArg* args, HostValue* host, void* results);
  void (*run_cpu_out)(const c10::OperatorHandle& out, const TypedArg* args,
                      HostValue* host, at::Tensor* outs);
  void (*map_results)(const TypedArg* args, const HostValue* host,
                      std::size_t count, AliasSet& aliases, void* results);
  void (*take_results)(c10::ArrayRef<at::Tensor> results, void* slots);
  void (*take_arguments)(const TypedArg* args, c10::ArrayRef<int> returned,
                         void* slots);
  void (*box)(const TypedArg* args, HostValue* host, torch::jit::Stack& stack);
};

/// run() over a typed call's arguments (src/emulate/Typed.cpp).
void runTyped(Rule& rule, const TypedArg* args, std::size_t count,
              const TypedOps& ops, void* results);

template <class R>
constexpr std::size_t resultCount() {
  if constexpr (std::is_void_v<R>) {
    return 0;
  } else if constexpr (std::is_same_v<R, at::Tensor> || kTensorRef<R>) {
    return 1;
  } else {
    return std::tuple_size_v<R>;
  }
}

template <auto Shape>
inline constexpr bool kHasShape =
    !std::is_same_v<decltype(Shape), std::nullptr_t>;

/// The typed kernel of `Op` (Note [Two argument representations]).
template <class Op, auto Shape, class Schema = typename Op::schema>
struct TypedKernel;
template <class Op, auto Shape, class R, class... Args>
struct TypedKernel<Op, Shape, R(Args...)> {
  /// The operator's rule, made on first use.
  static Rule& rule() {
    static Rule& made = typedRule(handleOf<Op>(), kHasShape<Shape>);
    return made;
  }

  static R call(Args... args) {
    Rule& rule = TypedKernel::rule();
    if (C10_UNLIKELY(!runsOnHostAliases(rule))) {
      // Note [Host access] (Driver.cpp): boxed, through the CPU fallback.
      static const auto typed = handleOf<Op>().template typed<R(Args...)>();
      return c10::impl::BoxedKernelWrapper<R(Args...)>::call(
          c10::BoxedKernel::makeFromFunction<&runWithoutHostAccess>(), typed,
          c10::DispatchKeySet(), std::forward<Args>(args)...);
    }
    static constexpr TypedOps kOps{&shapes,     &runCpu,      &runCpuOut,
                                   &mapResults, &takeResults, &takeArguments,
                                   &box};
    const std::array<TypedArg, sizeof...(Args)> erased{typedArg(args)...};
    Slots slots;
    runTyped(rule, erased.data(), erased.size(), kOps, &slots);
    if constexpr (!std::is_void_v<R>) {
      if constexpr (std::is_reference_v<R>) {
        return slots.device->get();
      } else {
        return std::move(*slots.device);
      }
    }
  }

 private:
  template <class T>
  using Held =
      std::conditional_t<std::is_reference_v<T>,
                         std::reference_wrapper<std::remove_reference_t<T>>, T>;
  struct NoResult {};
  using Result = std::conditional_t<std::is_void_v<R>, NoResult, R>;
  struct Slots {
    std::optional<Held<Result>> cpu;
    std::optional<Held<Result>> device;
  };
  using Indices = std::index_sequence_for<Args...>;
  static constexpr std::size_t kResults = resultCount<R>();

  // Only a rule with a shape function asks for shapes
  // (Note [How an emulated operator runs]).
  static void shapes(const TypedArg* args, ShapeCache::Results& out) {
    if constexpr (kHasShape<Shape> && !std::is_void_v<R>) {
      shapesOf(args, out, Indices{});
    } else {
      TORCH_INTERNAL_ASSERT(false,
                            "shapes asked of an operator without a "
                            "shape function");
    }
  }
  template <std::size_t... I>
  static void shapesOf(const TypedArg* args, ShapeCache::Results& out,
                       std::index_sequence<I...> /*indices*/) {
    // Held, so that an in-place shape function's Tensor& binds to them.
    std::tuple<std::decay_t<decltype(metaValue<Args>(args[I]))>...> metas(
        metaValue<Args>(args[I])...);
    collectShapes(Shape(std::get<I>(metas)...), out);
  }

  static void runCpu(const TypedArg* args, HostValue* host, void* slots) {
    runCpuOf(args, host, *static_cast<Slots*>(slots), Indices{});
  }
  template <std::size_t... I>
  static void runCpuOf(const TypedArg* args, HostValue* host, Slots& slots,
                       std::index_sequence<I...> /*indices*/) {
    if constexpr (std::is_void_v<R>) {
      Op::redispatch(kCpuKeySet, hostValue<Args>(args[I], host[I])...);
    } else {
      slots.cpu.emplace(
          Op::redispatch(kCpuKeySet, hostValue<Args>(args[I], host[I])...));
    }
  }

  static void runCpuOut(const c10::OperatorHandle& out, const TypedArg* args,
                        HostValue* host, at::Tensor* outs) {
    if constexpr (NewTensors<R>::value) {
      using OutSchema = typename OutSchemaOf<R, Args...>::type;
      // The rule's out= overload takes the operator's arguments, then one
      // Tensor& per result (Note [How an emulated operator runs]).
      static const auto typed = out.typed<OutSchema>();
      runCpuOutOf(typed, args, host, outs, Indices{},
                  std::make_index_sequence<kResults>{});
    }
  }
  template <class Typed, std::size_t... I, std::size_t... J>
  static void runCpuOutOf(const Typed& out, const TypedArg* args,
                          HostValue* host, at::Tensor* outs,
                          std::index_sequence<I...> /*in*/,
                          std::index_sequence<J...> /*out*/) {
    out.redispatch(kCpuKeySet, hostValue<Args>(args[I], host[I])...,
                   outs[J]...);
  }

  static void mapResults(const TypedArg* args, const HostValue* host,
                         std::size_t count, AliasSet& aliases, void* slots) {
    if constexpr (!std::is_void_v<R>) {
      auto& s = *static_cast<Slots*>(slots);
      s.device.emplace(toDevice<R>(args, host, count, aliases, unwrap(*s.cpu)));
    }
  }
  static void takeResults(c10::ArrayRef<at::Tensor> results, void* slots) {
    if constexpr (NewTensors<R>::value) {
      auto& s = *static_cast<Slots*>(slots);
      if constexpr (kResults == 1) {
        s.device.emplace(results[0]);
      } else {
        s.device.emplace(
            takeTuple(results, std::make_index_sequence<kResults>{}));
      }
    }
  }
  static void takeArguments(const TypedArg* args, c10::ArrayRef<int> returned,
                            void* slots) {
    if constexpr (!std::is_void_v<R> && !NewTensors<R>::value) {
      auto& s = *static_cast<Slots*>(slots);
      if constexpr (kResults == 1) {
        s.device.emplace(argumentAt(args, returned[0]));
      } else {
        s.device.emplace(takeArgumentTuple(
            args, returned, std::make_index_sequence<kResults>{}));
      }
    }
  }
  template <std::size_t... I>
  static R takeArgumentTuple(const TypedArg* args, c10::ArrayRef<int> returned,
                             std::index_sequence<I...> /*indices*/) {
    return R(argumentAt(args, returned[I])...);
  }
  static at::Tensor& argumentAt(const TypedArg* args, int index) {
    // The argument is the caller's Tensor& (or const Tensor&) parameter.
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
    return *const_cast<at::Tensor*>(
        static_cast<const at::Tensor*>(args[index].value));
  }

  static void box(const TypedArg* args, HostValue* host,
                  torch::jit::Stack& stack) {
    boxOf(args, host, stack, Indices{});
  }
  template <std::size_t... I>
  static void boxOf(const TypedArg* args, HostValue* host,
                    torch::jit::Stack& stack,
                    std::index_sequence<I...> /*indices*/) {
    torch::jit::Stack boxed =
        c10::impl::boxArgs<Args...>(hostValue<Args>(args[I], host[I])...);
    stack.insert(stack.end(), std::make_move_iterator(boxed.begin()),
                 std::make_move_iterator(boxed.end()));
  }

  template <std::size_t... I>
  static R takeTuple(c10::ArrayRef<at::Tensor> results,
                     std::index_sequence<I...> /*indices*/) {
    return R(results[I]...);
  }

  template <class T>
  static T& unwrap(std::reference_wrapper<T> ref) {
    return ref.get();
  }
  template <class T>
  static T& unwrap(T& value) {
    return value;
  }

  // A result of the CPU kernel on the device: a new tensor through the
  // alias set, a Tensor& as the argument whose host alias it is.
  template <class T>
  static T toDeviceOne(const TypedArg* args, const HostValue* host,
                       std::size_t count, AliasSet& aliases,
                       const at::Tensor& value) {
    if constexpr (std::is_same_v<T, at::Tensor>) {
      return aliases.toDevice(value);
    } else {
      return argumentFor(args, host, count, value, Op::name);
    }
  }
  template <class T, class V>
  static Held<T> toDevice(const TypedArg* args, const HostValue* host,
                          std::size_t count, AliasSet& aliases,
                          const V& value) {
    if constexpr (std::is_same_v<T, at::Tensor> || kTensorRef<T>) {
      return toDeviceOne<T>(args, host, count, aliases, value);
    } else {
      return toDeviceTuple<T>(args, host, count, aliases, value,
                              std::make_index_sequence<std::tuple_size_v<T>>{});
    }
  }
  template <class T, class V, std::size_t... I>
  static T toDeviceTuple(const TypedArg* args, const HostValue* host,
                         std::size_t count, AliasSet& aliases, const V& value,
                         std::index_sequence<I...> /*indices*/) {
    // Braces: the results are mapped in their order (Note [Learned shapes]).
    return T{toDeviceOne<std::tuple_element_t<I, T>>(args, host, count, aliases,
                                                     std::get<I>(value))...};
  }
};

template <class Op>
void boxedCall(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  runBoxed(op, stack);
}

}  // namespace detail

template <class Op, auto Shape>
torch::CppFunction kernel() {
  using Schema = typename Op::schema;
  if constexpr (detail::StructuredLoop<Op>::kRuns) {
    // Note [Structured loops on the device] (src/emulate/Loops.cpp).
    return torch::CppFunction(
        c10::CompileTimeFunctionPointer<
            Schema, &detail::LoopKernel<Op, detail::TypedKernel<Op, Shape>,
                                        Schema>::call>());
  } else if constexpr (detail::TypedFits<Schema>::value) {
    return torch::CppFunction(
        c10::CompileTimeFunctionPointer<
            Schema, &detail::TypedKernel<Op, Shape, Schema>::call>());
  } else if constexpr (detail::kHasShape<Shape>) {
    return detail::boxedKernel(c10::KernelFunction::makeFromUnboxedFunction(
        c10::CompileTimeFunctionPointer<std::remove_pointer_t<decltype(Shape)>,
                                        Shape>()));
  } else {
    return boxedKernel();
  }
}

template <class Op, class... Args>
decltype(auto) call(Args&&... args) {
  using Schema = typename Op::schema;
  if constexpr (detail::TypedFits<Schema>::value) {
    return detail::TypedKernel<Op, nullptr, Schema>::call(
        std::forward<Args>(args)...);
  } else {
    static const auto typed = detail::handleOf<Op>().template typed<Schema>();
    return c10::impl::BoxedKernelWrapper<Schema>::call(
        c10::BoxedKernel::makeFromFunction<&detail::boxedCall<Op>>(), typed,
        c10::DispatchKeySet(), std::forward<Args>(args)...);
  }
}

}  // namespace accgen::runtime::emulate
