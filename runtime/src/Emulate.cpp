// Emulated execution of the device operators: host aliases of device tensors,
// kernels launched on the current stream, results mapped back to the device.
// See Emulate.h and Note [Emulated execution] in docs/operators.md.
#include "accgen/runtime/Emulate.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/Allocator.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime::emulate {
namespace {

constexpr c10::DispatchKeySet kCpuKeys{c10::DispatchKey::CPU};
constexpr c10::DispatchKeySet kMetaKeys{c10::DispatchKey::Meta};

using detail::AliasSet;
using detail::ShapeCache;

using detail::onDevice;

// A tensor over `storage` with the given dtype and geometry, on `key`.
at::Tensor tensorOver(c10::Storage storage, c10::DispatchKey key,
                      caffe2::TypeMeta dtype, c10::IntArrayRef sizes,
                      c10::IntArrayRef strides, int64_t storage_offset) {
  auto t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(key), dtype);
  t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides,
                                                 storage_offset);
  return t;
}

// A meta tensor with the dtype and geometry of `t`.
at::Tensor metaOf(const at::Tensor& t) {
  c10::Storage storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), t.storage().nbytes(),
      c10::DataPtr(nullptr, c10::Device(c10::kMeta)),
      c10::GetAllocator(c10::kMeta), /*resizable=*/true));
  return tensorOver(std::move(storage), c10::DispatchKey::Meta, t.dtype(),
                    t.sizes(), t.strides(), t.storage_offset());
}

bool isGeneratorType(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::GeneratorType) {
    return true;
  }
  const auto* optional = type->castRaw<c10::OptionalType>();
  return optional != nullptr &&
         optional->getElementType()->kind() == c10::TypeKind::GeneratorType;
}

// How the emulation treats one argument of a schema.
enum class ArgKind {
  kOther,
  kTensor,
  kTensorList,
  kOptionalTensorList,
  kGenerator,
  kDevice,
};

// Operators that take CPU tensors beside device tensors by design, as on
// CUDA (Note [Device misuse]): copies between devices, and the split points
// of tensor_split, which must be on the CPU.
bool allowsCpuTensors(const c10::FunctionSchema& schema) {
  static const std::set<std::string, std::less<>> kOps = {
      "aten::_copy_from", "aten::_copy_from_and_resize", "aten::_to_copy",
      "aten::copy_", "aten::tensor_split"};
  return kOps.count(schema.name()) != 0;
}

// What the emulation needs to know of a schema, computed once per operator.
struct Plan {
  std::vector<ArgKind> kinds;
  std::vector<bool> written;
  std::size_t num_returns = 0;
  bool has_generator = false;
  bool allows_cpu_tensors = false;

  explicit Plan(const c10::FunctionSchema& schema) {
    for (const auto& arg : schema.arguments()) {
      c10::TypePtr type = arg.real_type();
      if (const auto* optional = type->castRaw<c10::OptionalType>()) {
        type = optional->getElementType();
      }
      ArgKind kind = ArgKind::kOther;
      if (type->kind() == c10::TypeKind::TensorType) {
        kind = ArgKind::kTensor;
      } else if (const auto* list = type->castRaw<c10::ListType>()) {
        const c10::TypePtr& elem = list->getElementType();
        if (elem->kind() == c10::TypeKind::TensorType) {
          kind = ArgKind::kTensorList;
        } else if (const auto* opt = elem->castRaw<c10::OptionalType>();
                   opt != nullptr &&
                   opt->getElementType()->kind() == c10::TypeKind::TensorType) {
          kind = ArgKind::kOptionalTensorList;
        }
      } else if (isGeneratorType(type)) {
        kind = ArgKind::kGenerator;
        has_generator = true;
      } else if (type->kind() == c10::TypeKind::DeviceObjType) {
        kind = ArgKind::kDevice;
      }
      kinds.push_back(kind);
      written.push_back(arg.alias_info() != nullptr &&
                        arg.alias_info()->isWrite());
    }
    num_returns = schema.returns().size();
    allows_cpu_tensors = allowsCpuTensors(schema);
  }
};

// Copies `nbytes` of `host` to `device_data` on the current stream of the
// device holding it; the launch owns the host tensor until the copy ran.
void copyAsync(void* device_data, at::Tensor host, std::size_t nbytes) {
  DeviceCopies copies;
  copies.addInto(device_data, std::move(host), nbytes);
  copies.launch();
}

// The tensor argument `value` of `kind` (Tensor, Tensor[] or Tensor?[]) with
// each device tensor it holds replaced by fn(tensor), in `mapped`; false
// (and `mapped` untouched) for arguments of other kinds and for None.
template <class Fn>
bool mapDeviceTensors(ArgKind kind, const c10::IValue& value, Fn fn,
                      c10::IValue& mapped) {
  switch (kind) {
    case ArgKind::kTensor:
      if (value.isTensor() && onDevice(value.toTensor())) {
        mapped = fn(value.toTensor());
        return true;
      }
      return false;
    case ArgKind::kTensorList: {
      if (value.isNone()) {
        return false;
      }
      c10::List<at::Tensor> list;
      list.reserve(value.toTensorList().size());
      for (const at::Tensor& t : value.toTensorList()) {
        list.push_back(onDevice(t) ? fn(t) : t);
      }
      mapped = std::move(list);
      return true;
    }
    case ArgKind::kOptionalTensorList: {
      if (value.isNone()) {
        return false;
      }
      c10::List<std::optional<at::Tensor>> list;
      for (std::optional<at::Tensor> t : value.toOptionalTensorList()) {
        if (t.has_value() && onDevice(*t)) {
          t = fn(*t);
        }
        list.push_back(std::move(t));
      }
      mapped = std::move(list);
      return true;
    }
    default:
      return false;
  }
}

// Replaces the device tensors among the arguments on top of `stack` by host
// aliases, and a device argument by the CPU (factory functions).
void aliasArguments(const Plan& plan, torch::jit::Stack& stack,
                    AliasSet& aliases) {
  const std::size_t n = plan.kinds.size();
  const std::size_t base = stack.size() - n;
  for (std::size_t i = 0; i < n; ++i) {
    c10::IValue& value = stack[base + i];
    const bool written = plan.written[i];
    c10::IValue mapped;
    if (mapDeviceTensors(
            plan.kinds[i], value,
            [&](const at::Tensor& t) { return aliases.alias(t, written); },
            mapped)) {
      value = std::move(mapped);
      continue;
    }
    switch (plan.kinds[i]) {
      case ArgKind::kDevice:
        if (value.isDevice() && value.toDevice().type() == kDeviceType) {
          aliases.setDeviceIfUnset(resolveDevice(value.toDevice().index()));
          value = c10::Device(c10::kCPU);
        }
        break;
      default:
        break;
    }
  }
  aliases.setDeviceIfUnset(currentDevice());
}

// Collects the warnings of a kernel on its worker thread for the caller.
class WarningCollector final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    // A result allocated here with its meta shape that the kernel still
    // resizes (mse_loss.out does, into a 0-dim result) concerns nobody.
    if (fresh_results && warning.msg().find("was resized since it had shape") !=
                             std::string::npos) {
      resized = true;
      return;
    }
    warnings.push_back(warning);
  }
  bool fresh_results = false;
  bool resized = false;
  std::vector<c10::Warning> warnings;
};

struct Launch {
  c10::function_ref<void()> fn;
  std::exception_ptr error;
  WarningCollector warnings;
  bool ran = false;
};

accError_t runLaunch(void* user_data) {
  auto* launch = static_cast<Launch*>(user_data);
  launch->ran = true;
  c10::WarningUtils::WarningHandlerGuard warning_guard(&launch->warnings);
  try {
    // The caller is below autograd, and so is the CPU kernel it runs.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    launch->fn();
  } catch (...) {
    launch->error = std::current_exception();
  }
  return accSuccess;
}

// Note [Exit with device work in flight]
// Python 3.11 ends a daemon thread that takes the GIL back while the
// interpreter finalizes by unwinding its stack, and torch's bindings, which
// release the GIL around every operator, do not allow that: the process
// ends in "terminate called without an active exception". A thread in a
// device operator holds the GIL released for the whole kernel, so a program
// that exits while a daemon thread drives the device would end that way
// almost every time. So once Python starts to exit (an atexit handler of
// the device module calls beginExit), any other thread that reaches a
// device kernel, or returns from one, parks for good with the GIL released;
// the process then exits around it. The exiting thread itself carries on.
// A thread that returned from its kernel just before exit began, and so
// waits for the GIL inside torch's binding, would still be ended there: the
// exiting thread therefore lets go of the GIL for a moment when other
// threads have used the device (beginExit's caller, the device module's
// atexit handler), so that such a thread gets back to Python and parks in
// its next device kernel before the interpreter finalizes. The collectives'
// completion thread, which completes futures and drops tensors that Python
// holds (both take the GIL), parks the same way (parkIfExitingThread).
std::atomic<bool> g_exiting{false};
std::atomic<std::thread::id> g_exit_thread{};
// Threads that launched device kernels, each counted once.
std::atomic<int> g_device_threads{0};
thread_local bool tls_device_thread = false;

void noteDeviceThread() noexcept {
  if (C10_UNLIKELY(!tls_device_thread)) {
    tls_device_thread = true;
    g_device_threads.fetch_add(1, std::memory_order_relaxed);
  }
}

void parkIfExiting() noexcept {
  if (C10_UNLIKELY(g_exiting.load(std::memory_order_acquire)) &&
      std::this_thread::get_id() != g_exit_thread.load()) {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::hours(1));
    }
  }
}

// After a launch ran: raises its warnings again on this thread and rethrows
// its exception.
void finishLaunch(const Launch& launch) {
  for (const c10::Warning& warning : launch.warnings.warnings) {
    c10::warn(warning);
  }
  if (launch.error) {
    std::rethrow_exception(launch.error);
  }
}

// Returns whether the kernel resized a result allocated for it
// (`fresh_results`).
bool launchAndWait(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                   c10::function_ref<void()> fn, bool fresh_results) {
  parkIfExiting();
  noteDeviceThread();
  Launch launch{fn, nullptr, {}, false};
  launch.warnings.fresh_results = fresh_results;
  // The CPU kernel reads this frame: a synchronous launch, which runs it on
  // this thread when the stream is idle.
  ACCGEN_CHECK(accLaunchKernelSync(currentNativeStream(device), &runLaunch,
                                   &launch, buffers.data(), buffers.size()));
  parkIfExiting();
  finishLaunch(launch);
  return launch.warnings.resized;
}

// Runs `op` on the arguments on top of `stack`; `fresh_results`: its out=
// arguments were allocated for it by runViaOut. Returns whether the kernel
// resized or reallocated a written argument.
bool runDirect(const c10::OperatorHandle& op, const Plan& plan,
               torch::jit::Stack* stack, bool fresh_results = false) {
  // Note [Device misuse]; runViaOut checked the arguments of a call it
  // makes with fresh results.
  if (!fresh_results && !plan.allows_cpu_tensors) {
    checkSameDevice(torch::jit::last(*stack, plan.kinds.size()));
  }
  AliasSet aliases;
  aliasArguments(plan, *stack, aliases);
  bool reshaped = false;
  {
    HostGenerators generators;
    if (plan.has_generator) {
      generators.borrow(op.schema(), *stack, aliases.device());
    }
    reshaped = launchAndWait(
        aliases.device(), aliases.buffers(),
        [&] { op.redispatchBoxed(kCpuKeys, stack); }, fresh_results);
  }
  reshaped = aliases.reconcileWritten() || reshaped;
  const std::size_t base = stack->size() - plan.num_returns;
  for (std::size_t i = base; i < stack->size(); ++i) {
    c10::IValue& value = (*stack)[i];
    if (value.isTensor()) {
      value = aliases.toDevice(value.toTensor());
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> mapped;
      for (const at::Tensor& t : value.toTensorList()) {
        mapped.push_back(aliases.toDevice(t));
      }
      value = std::move(mapped);
    }
  }
  aliases.launchCopies();
  return reshaped;
}

// Note [Shape cache]
// A functional operator computed through its out= overload gets its
// results' sizes, strides and dtypes from a meta computation, which costs
// more than a small operator's kernel. That computation reads nothing but
// the arguments (a tensor's metadata, any other argument's value) and
// torch's default dtypes, so each operator keeps its answer for the last
// few distinct calls. The key holds the default dtypes and, for every
// argument, a tag and either the tensor's device type, dtype, flags
// (wrapped number, conjugate, negative), sizes, strides and storage offset,
// or the value itself. Calls with arguments of other kinds (lists of
// tensors, strings, generators, complex numbers, symbolic integers) are not
// keyed and always compute.
// Appends the key of a non-tensor argument; false for kinds not keyed.
bool keyValue(const c10::IValue& v, ShapeCache::Key& key) {
  if (v.isNone()) {
    key.push_back(1);
    return true;
  }
  if (v.isInt()) {
    return detail::keyArg(key, v.toInt());
  }
  if (v.isDouble()) {
    return detail::keyArg(key, v.toDouble());
  }
  if (v.isBool()) {
    return detail::keyArg(key, v.toBool());
  }
  if (v.isIntList()) {
    return detail::keyArg(key, at::IntArrayRef(v.toIntVector()));
  }
  if (v.isDoubleList()) {
    return detail::keyArg(key, c10::ArrayRef<double>(v.toDoubleVector()));
  }
  if (v.isBoolList()) {
    const c10::List<bool> values = v.toBoolList();
    key.insert(key.end(), {8, static_cast<int64_t>(values.size())});
    for (const bool value : values) {
      key.push_back(value ? 1 : 0);
    }
    return true;
  }
  if (v.isDevice()) {
    key.insert(key.end(), {9, static_cast<int64_t>(v.toDevice().type()),
                           v.toDevice().index()});
    return true;
  }
  return false;
}

// A functional operator computed through its out= overload.
struct OutPlan {
  Plan functional;
  Plan out;
  // For each argument of the out= overload that is not an out argument, the
  // index of the functional argument of the same name.
  std::vector<std::size_t> from_functional;
  // Note [Shape cache].
  mutable ShapeCache shapes;

  OutPlan(const c10::FunctionSchema& f, const c10::FunctionSchema& o)
      : functional(f), out(o) {
    std::size_t num_out = 0;
    for (const auto& arg : o.arguments()) {
      if (arg.is_out()) {
        ++num_out;
        continue;
      }
      const auto index = f.argumentIndexWithName(arg.name());
      TORCH_INTERNAL_ASSERT(index.has_value(), o.name(), " has argument ",
                            arg.name(), ", which ", f.name(), " lacks");
      from_functional.push_back(static_cast<std::size_t>(*index));
    }
    TORCH_INTERNAL_ASSERT(num_out == f.returns().size(), o.name(),
                          " does not write every result of ", f.name());
  }
};

// The device a functional call computes on: that of its first device
// tensor, else of its device argument, else the current one.
c10::DeviceIndex callDevice(const Plan& plan, const torch::jit::Stack& stack) {
  const std::size_t n = plan.kinds.size();
  const std::size_t base = stack.size() - n;
  for (std::size_t i = 0; i < n; ++i) {
    const c10::IValue& value = stack[base + i];
    switch (plan.kinds[i]) {
      case ArgKind::kTensor:
        if (value.isTensor() && onDevice(value.toTensor())) {
          return value.toTensor().device().index();
        }
        break;
      case ArgKind::kTensorList:
        if (!value.isNone()) {
          for (const at::Tensor& t : value.toTensorList()) {
            if (onDevice(t)) {
              return t.device().index();
            }
          }
        }
        break;
      case ArgKind::kOptionalTensorList:
        if (!value.isNone()) {
          for (const std::optional<at::Tensor> t :
               value.toOptionalTensorList()) {
            if (t.has_value() && onDevice(*t)) {
              return t->device().index();
            }
          }
        }
        break;
      case ArgKind::kDevice:
        if (value.isDevice() && value.toDevice().type() == kDeviceType) {
          return resolveDevice(value.toDevice().index());
        }
        break;
      default:
        break;
    }
  }
  return currentDevice();
}

// The arguments of a functional call as the Meta kernel takes them.
torch::jit::Stack metaArguments(const Plan& plan,
                                const torch::jit::Stack& stack) {
  const std::size_t n = plan.kinds.size();
  const std::size_t base = stack.size() - n;
  torch::jit::Stack meta;
  meta.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const c10::IValue& value = stack[base + i];
    c10::IValue mapped;
    if (mapDeviceTensors(plan.kinds[i], value, &metaOf, mapped)) {
      meta.push_back(std::move(mapped));
      continue;
    }
    switch (plan.kinds[i]) {
      case ArgKind::kGenerator:
        meta.emplace_back();
        continue;
      case ArgKind::kDevice:
        if (value.isDevice() && value.toDevice().type() == kDeviceType) {
          meta.emplace_back(c10::Device(c10::kMeta));
          continue;
        }
        break;
      default:
        break;
    }
    meta.push_back(value);
  }
  return meta;
}

// The Note [Shape cache] key of the functional call on top of `stack`;
// false when an argument is not keyed.
bool shapeKey(const Plan& plan, const torch::jit::Stack& stack,
              ShapeCache::Key& key) {
  detail::keyDefaults(key);
  const std::size_t n = plan.kinds.size();
  const std::size_t base = stack.size() - n;
  for (std::size_t i = 0; i < n; ++i) {
    const c10::IValue& value = stack[base + i];
    switch (plan.kinds[i]) {
      case ArgKind::kTensor: {
        const bool keyed =
            value.isNone() ? detail::keyArg(key, std::optional<at::Tensor>())
                           : detail::keyArg(key, value.toTensor());
        if (!keyed) {
          return false;
        }
        break;
      }
      case ArgKind::kDevice:
      case ArgKind::kOther:
        if (!keyValue(value, key)) {
          return false;
        }
        break;
      default:
        return false;
    }
  }
  return true;
}

// What runViaOut did.
enum class ViaOut {
  kDone,
  kDeclined,  // keyed_only: no shape key, or the Meta kernel failed
  kReshaped,  // keyed_only: the out= kernel wanted results of another shape
};

// Computes a functional call through its out= overload. `keyed_only`
// (the emulate fallback): only when the call has a Note [Shape cache] key,
// its Meta kernel succeeds and the out= kernel keeps the results' shapes;
// otherwise the stack is left as it was.
ViaOut runViaOut(const c10::OperatorHandle& op, const c10::OperatorHandle& out,
                 const c10::KernelFunction* shape, const OutPlan& plan,
                 torch::jit::Stack* stack, bool keyed_only = false) {
  const std::size_t n = plan.functional.kinds.size();
  const std::size_t base = stack->size() - n;
  // Before the shape computation, which would report meta tensors.
  if (!plan.functional.allows_cpu_tensors) {
    checkSameDevice(torch::jit::last(*stack, n));
  }

  ShapeCache::Key key;
  ShapeCache::Results shapes;
  const bool keyed = shapeKey(plan.functional, *stack, key);
  if (keyed_only && !keyed) {
    return ViaOut::kDeclined;
  }
  if (!keyed || !plan.shapes.lookup(key, shapes)) {
    torch::jit::Stack meta = metaArguments(plan.functional, *stack);
    // A C++ shape function when there is one: the Meta key may lead to a
    // Python meta kernel, two orders of magnitude slower.
    if (shape != nullptr) {
      shape->callBoxed(op, kMetaKeys, &meta);
    } else if (keyed_only) {
      // A Meta kernel that fails where the CPU kernel may not (or that
      // raises the same error) leaves the call to the CPU kernel.
      try {
        op.redispatchBoxed(kMetaKeys, &meta);
      } catch (const std::exception&) {
        return ViaOut::kDeclined;
      }
    } else {
      op.redispatchBoxed(kMetaKeys, &meta);
    }
    for (const c10::IValue& r : meta) {
      detail::collectShapes(r.toTensor(), shapes);
    }
    if (keyed) {
      plan.shapes.insert(std::move(key), shapes);
    }
  }
  const c10::Device target(kDeviceType, callDevice(plan.functional, *stack));
  c10::DeviceGuard guard(target);
  c10::SmallVector<at::Tensor, 2> results;
  for (const ShapeCache::Result& r : shapes) {
    results.push_back(detail::allocateResult(r.sizes, r.strides, r.dtype));
  }

  torch::jit::Stack out_stack;
  out_stack.reserve(plan.out.kinds.size());
  std::size_t next_arg = 0;
  std::size_t next_out = 0;
  for (std::size_t i = 0; i < plan.out.kinds.size(); ++i) {
    if (plan.out.written[i]) {
      out_stack.emplace_back(results[next_out++]);
    } else if (keyed_only) {
      // Kept for a second run (below).
      out_stack.push_back((*stack)[base + plan.from_functional[next_arg++]]);
    } else {
      out_stack.push_back(
          std::move((*stack)[base + plan.from_functional[next_arg++]]));
    }
  }
  if (runDirect(out, plan.out, &out_stack, /*fresh_results=*/true) &&
      keyed_only) {
    // The out= kernel resized a result it was given in the shape of the
    // Meta kernel: it expects another (binary_cross_entropy.out computes
    // the elementwise loss into it, then reduces). The functional kernel
    // decides instead.
    return ViaOut::kReshaped;
  }

  torch::jit::drop(*stack, n);
  for (at::Tensor& r : results) {
    stack->emplace_back(std::move(r));
  }
  return ViaOut::kDone;
}

c10::OperatorHandle findAten(const std::string& full_name) {
  const auto dot = full_name.find('.');
  const std::string name = "aten::" + full_name.substr(0, dot);
  const std::string overload =
      dot == std::string::npos ? "" : full_name.substr(dot + 1);
  return c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(),
                                                        overload.c_str());
}

// The registered kernel of one operator; its plan is made on first use.
class EmulateKernel final : public c10::OperatorKernel {
 public:
  EmulateKernel(const char* out_op, std::optional<c10::KernelFunction> shape)
      : out_name_(out_op), shape_(std::move(shape)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet,
                  torch::jit::Stack* stack) {
    std::call_once(planned_, [&] {
      if (out_name_ == nullptr) {
        plan_ = std::make_unique<Plan>(op.schema());
      } else {
        out_ = findAten(out_name_);
        out_plan_ = std::make_unique<OutPlan>(op.schema(), out_->schema());
      }
    });
    if (out_plan_) {
      runViaOut(op, *out_, shape_ ? &*shape_ : nullptr, *out_plan_, stack);
    } else {
      runDirect(op, *plan_, stack);
    }
  }

 private:
  const char* out_name_;
  std::optional<c10::KernelFunction> shape_;
  std::once_flag planned_;
  std::optional<c10::OperatorHandle> out_;
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<OutPlan> out_plan_;
};

// Plans of type T by operator, made on first use and kept for the life of
// the process: the emulate fallback's, and those of operators emulated
// through runBoxed (kernel starters). Lookups share a lock; a plan is made
// outside it, and the first one made for an operator is kept.
template <class T>
class PlanCache {
 public:
  template <class Make>
  T& of(const c10::OperatorHandle& op, Make make) {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      const auto it = plans_.find(op.operator_name());
      if (it != plans_.end()) {
        return *it->second;
      }
    }
    std::unique_ptr<T> plan = make();
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto [it, inserted] = plans_.try_emplace(op.operator_name(), nullptr);
    if (inserted) {
      it->second = std::move(plan);
    }
    return *it->second;
  }

  template <class Fn>
  void forEach(Fn fn) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    for (const auto& [name, plan] : plans_) {
      fn(name, *plan);
    }
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<c10::OperatorName, std::unique_ptr<T>> plans_;
};

template <class T>
PlanCache<T>& planCache() {
  // Never destroyed: operators may still run during static destruction.
  static auto* cache = new PlanCache<T>();
  return *cache;
}

// Note [Emulate fallback]
// `fallback: emulate` runs every operator the backend does not register the
// way `emulate` entries run: a functional operator with an out= overload
// whose CPU kernel can write device memory (same arguments by name and
// type, one Tensor out argument per result) and a Meta kernel for its
// shapes is computed through that overload, straight into device memory;
// any other operator runs its CPU kernel on host aliases, and new results
// are copied to the device once. Each operator's plan is made on first use
// (PlanCache); its calls are counted for fallbackCounts().
struct FallbackPlan {
  explicit FallbackPlan(const c10::OperatorHandle& op) : direct(op.schema()) {
    random_without_generator =
        !direct.has_generator && op.hasTag(at::Tag::nondeterministic_seeded);
    out = outOverloadOf(op);
    if (out.has_value()) {
      via_out = std::make_unique<OutPlan>(op.schema(), out->schema());
    }
  }

  Plan direct;
  bool random_without_generator = false;
  // Cleared when the out= overload turns out to want results of other
  // shapes than the Meta kernel gives (ViaOut::kReshaped).
  std::atomic<bool> via_out_fits{true};
  std::optional<c10::OperatorHandle> out;
  std::unique_ptr<OutPlan> via_out;
  std::atomic<int64_t> calls{0};

 private:
  // The out= overload that computes `op`'s results in place, if it has one
  // the emulation can use (Note [Emulate fallback]).
  static std::optional<c10::OperatorHandle> outOverloadOf(
      const c10::OperatorHandle& op) {
    const c10::FunctionSchema& f = op.schema();
    if (f.returns().empty() || f.is_mutable() ||
        !op.hasKernelForDispatchKey(c10::DispatchKey::Meta)) {
      return std::nullopt;
    }
    for (const auto& r : f.returns()) {
      if (r.alias_info() != nullptr ||
          r.real_type()->kind() != c10::TypeKind::TensorType) {
        return std::nullopt;
      }
    }
    for (const c10::OperatorName& name : overloadsOf(f.name())) {
      auto candidate = c10::Dispatcher::singleton().findOp(name);
      if (!candidate.has_value() ||
          !candidate->hasKernelForDispatchKey(c10::DispatchKey::CPU)) {
        continue;
      }
      if (writesResultsOf(f, candidate->schema())) {
        return candidate;
      }
    }
    return std::nullopt;
  }

  // Whether `o` is the out= form of `f`: every other argument is one of
  // f's, of the same name and type, and it writes one Tensor per result.
  static bool writesResultsOf(const c10::FunctionSchema& f,
                              const c10::FunctionSchema& o) {
    std::size_t num_out = 0;
    std::size_t num_in = 0;
    for (const auto& arg : o.arguments()) {
      if (arg.is_out()) {
        if (arg.real_type()->kind() != c10::TypeKind::TensorType) {
          return false;
        }
        ++num_out;
        continue;
      }
      const auto index = f.argumentIndexWithName(arg.name());
      if (!index.has_value() ||
          *f.arguments()[*index].real_type() != *arg.real_type()) {
        return false;
      }
      ++num_in;
    }
    return num_out > 0 && num_out == f.returns().size() &&
           num_in == f.arguments().size();
  }

  // The overloads of operator `name` whose schema has out arguments, from
  // an index of the dispatcher's operators made on first use.
  static const std::vector<c10::OperatorName>& overloadsOf(
      const std::string& name) {
    static const auto* const index = [] {
      auto* by_name =
          new std::unordered_map<std::string, std::vector<c10::OperatorName>>();
      for (const c10::OperatorName& op :
           c10::Dispatcher::singleton().getAllOpNames()) {
        if (op.overload_name.ends_with("out")) {
          (*by_name)[op.name].push_back(op);
        }
      }
      return by_name;
    }();
    static const std::vector<c10::OperatorName> kNone;
    const auto it = index->find(name);
    return it == index->end() ? kNone : it->second;
  }
};

// While a random CPU kernel without a generator argument runs for the
// device, the CPU default generator carries the state of the device's
// default generator, which gets the advanced state back: seeding through
// torch.<device> drives it (Note [Device generators on CPU kernels]). The
// CPU default generator is not locked for the call, since the kernel locks
// it; CPU random calls on other threads meanwhile see the device's state.
class DefaultGeneratorSwap {
 public:
  explicit DefaultGeneratorSwap(c10::DeviceIndex device)
      : scope_(std::nullopt, device),
        cpu_default_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(cpu_default_.mutex());
    saved_ = cpu_default_.get_state();
    cpu_default_.set_state(scope_.cpu().get_state());
  }
  ~DefaultGeneratorSwap() {
    std::lock_guard<std::mutex> lock(cpu_default_.mutex());
    at::Generator stand_in = scope_.cpu();
    stand_in.set_state(cpu_default_.get_state());
    cpu_default_.set_state(saved_);
  }
  DefaultGeneratorSwap(const DefaultGeneratorSwap&) = delete;
  DefaultGeneratorSwap& operator=(const DefaultGeneratorSwap&) = delete;

 private:
  CpuGeneratorScope scope_;
  at::Generator cpu_default_;
  at::Tensor saved_;
};

// The plan of an operator emulated through runBoxed.
template <class T>
const T& cachedPlan(const c10::OperatorHandle& op,
                    const c10::OperatorHandle* out) {
  return planCache<T>().of(op, [&] {
    if constexpr (std::is_same_v<T, Plan>) {
      return std::make_unique<T>(op.schema());
    } else {
      return std::make_unique<T>(op.schema(), out->schema());
    }
  });
}

}  // namespace

// Note [Device misuse]: what real hardware refuses, the emulation refuses
// too, before a kernel touches device memory, so that code which runs on
// the emulator does not break on the chip.

void checkInBounds(const at::TensorBase& t) {
  if (!t.defined() || t.numel() == 0) {
    return;
  }
  const std::size_t held = t.storage().nbytes();
  const std::size_t needed = at::detail::computeStorageNbytes(
      t.sizes(), t.strides(), t.itemsize(),
      static_cast<std::size_t>(t.storage_offset()));
  TORCH_CHECK(needed <= held, "a ", kDeviceName, " tensor of sizes ", t.sizes(),
              ", strides ", t.strides(), " and storage offset ",
              t.storage_offset(), " needs a storage of ", needed,
              " bytes; its storage holds ", held,
              " (resized or replaced after the tensor was made?)");
}

void SameDeviceCheck::add(const at::Tensor& t) {
  if (!t.defined()) {
    return;
  }
  if (t.device().type() == kDeviceType) {
    device_ = device_.value_or(t.device());
  } else if (t.device().type() == c10::kCPU && t.dim() != 0) {
    cpu_tensor_ = true;
  }
}

void SameDeviceCheck::add(const std::optional<at::Tensor>& t) {
  if (t.has_value()) {
    add(*t);
  }
}

void SameDeviceCheck::add(const at::ITensorListRef& ts) {
  for (const at::Tensor& t : ts) {
    add(t);
  }
}

void SameDeviceCheck::finish() const {
  TORCH_CHECK(!(cpu_tensor_ && device_.has_value()),
              "Expected all tensors to be on the same device, but found at "
              "least two devices, ",
              device_.value_or(c10::Device(kDeviceType)), " and cpu!");
}

void checkSameDevice(c10::ArrayRef<c10::IValue> args) {
  SameDeviceCheck check;
  for (const c10::IValue& arg : args) {
    if (arg.isTensor()) {
      check.add(arg.toTensor());
    } else if (arg.isTensorList()) {
      check.add(at::ITensorListRef(arg.toTensorList()));
    }
  }
  check.finish();
}

at::Tensor hostAlias(const at::Tensor& device_tensor) {
  AliasSet aliases;
  return aliases.alias(device_tensor, /*written=*/false);
}

// The one copy of the emulation: a result in fresh host memory goes to a
// new device tensor, copied by a kernel that owns the host tensor until it
// ran, so that nothing waits for it (the stream orders what reads it).
at::Tensor copyToDevice(at::Tensor host, c10::Device device) {
  DeviceCopies copies;
  at::Tensor result = copies.add(std::move(host), device);
  copies.launch();
  return result;
}

namespace {

struct PendingCopies {
  std::vector<DeviceCopies::Copy> copies;
};

accError_t runCopies(PendingCopies& pending) {
  for (const DeviceCopies::Copy& copy : pending.copies) {
    std::memcpy(copy.device_data, copy.host.const_data_ptr(), copy.nbytes);
  }
  return accSuccess;
}

}  // namespace

at::Tensor DeviceCopies::add(at::Tensor host, c10::Device device) {
  if (!host.is_non_overlapping_and_dense()) {
    host = host.contiguous();
  }
  const c10::DeviceGuard guard(device);
  at::Tensor result =
      detail::allocateResult(host.sizes(), host.strides(), host.scalar_type());
  const std::size_t nbytes = at::detail::computeStorageNbytes(
      host.sizes(), host.strides(), host.itemsize());
  addInto(result.data_ptr(), std::move(host), nbytes);
  return result;
}

void DeviceCopies::addInto(void* device_data, at::Tensor host,
                           std::size_t nbytes) {
  if (nbytes > 0) {
    copies_.push_back({device_data, std::move(host), nbytes});
  }
}

void DeviceCopies::launch() {
  if (copies_.empty()) {
    return;
  }
  c10::SmallVector<const void*, 4> buffers;
  for (const Copy& copy : copies_) {
    buffers.push_back(copy.device_data);
  }
  auto pending = std::make_unique<PendingCopies>();
  pending->copies = std::move(copies_);
  copies_.clear();
  launchOwning<PendingCopies, &runCopies>(currentNativeStream(),
                                          std::move(pending), buffers);
}

at::Tensor metaTensor(const at::Tensor& t) {
  return metaOf(t);
}

void parkIfExitingThread() noexcept {
  parkIfExiting();
  noteDeviceThread();
}

bool beginExit() noexcept {
  g_exit_thread.store(std::this_thread::get_id());
  g_exiting.store(true, std::memory_order_release);
  return g_device_threads.load(std::memory_order_relaxed) >
         (tls_device_thread ? 1 : 0);
}

void runOnDevice(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                 c10::function_ref<void()> fn) {
  launchAndWait(device, buffers, fn, /*fresh_results=*/false);
}

bool runOnDeviceIfIdle(c10::DeviceIndex device,
                       c10::ArrayRef<const void*> buffers,
                       c10::function_ref<void()> fn) {
  // An exiting process parks other threads in runOnDevice, which needs the
  // caller's lock released first.
  if (C10_UNLIKELY(g_exiting.load(std::memory_order_acquire))) {
    return false;
  }
  noteDeviceThread();
  Launch launch{fn, nullptr, {}, false};
  const accError_t launched =
      accLaunchKernelEx(currentNativeStream(device), &runLaunch, &launch,
                        buffers.data(), buffers.size(), accLaunchIfIdle);
  if (!launch.ran && launched == accErrorNotReady) {
    return false;
  }
  ACCGEN_CHECK(launched);
  finishLaunch(launch);
  return true;
}

at::Tensor HostViews::operator()(const at::Tensor& device_tensor) {
  if (!device_tensor.defined()) {
    return device_tensor;
  }
  TORCH_CHECK(device_tensor.device().type() == kDeviceType,
              "expected a tensor on device '", kDeviceName, "', got one on ",
              device_tensor.device());
  if (device_ < 0) {
    device_ = device_tensor.device().index();
  }
  TORCH_CHECK(device_tensor.device().index() == device_,
              "Expected all tensors to be on the same device, but found "
              "at least two devices, ",
              c10::Device(kDeviceType, device_), " and ",
              device_tensor.device(), "!");
  if (const void* data = device_tensor.storage().data(); data != nullptr) {
    buffers_.push_back(data);
  }
  return hostAlias(device_tensor);
}

std::optional<at::Tensor> HostViews::operator()(
    const std::optional<at::Tensor>& t) {
  if (!t.has_value()) {
    return std::nullopt;
  }
  return (*this)(*t);
}

void HostViews::run(c10::function_ref<void()> fn) const {
  runOnDevice(device().index(), buffers_, fn);
}

c10::Device HostViews::device() const {
  return {kDeviceType, device_ < 0 ? currentDevice() : device_};
}

void HostGenerators::borrow(const c10::FunctionSchema& schema,
                            torch::jit::Stack& stack, c10::DeviceIndex device) {
  const auto& arguments = schema.arguments();
  const std::size_t base = stack.size() - arguments.size();
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (!isGeneratorType(arguments[i].real_type())) {
      continue;
    }
    c10::IValue& value = stack[base + i];
    std::optional<at::Generator> generator;
    if (value.isGenerator()) {
      generator = value.toGenerator();
      // As on other devices: a CPU generator does not drive device tensors.
      TORCH_CHECK(generator->device().type() == kDeviceType, "Expected a '",
                  c10::DeviceType(kDeviceType),
                  "' device type for generator but found '",
                  generator->device().type(), "'");
    }
    // One stand-in per generator, however often it is passed.
    const CpuGeneratorScope* scope = nullptr;
    for (const auto& s : scopes_) {
      if (!generator.has_value() ? s->device() == getDefaultGenerator(device)
                                 : s->device() == *generator) {
        scope = s.get();
      }
    }
    if (scope == nullptr) {
      scopes_.push_back(std::make_unique<CpuGeneratorScope>(generator, device));
      scope = scopes_.back().get();
    }
    value = scope->cpu();
  }
}

torch::CppFunction direct() {
  return torch::CppFunction::makeFromBoxedFunctor(
      std::make_unique<EmulateKernel>(nullptr, std::nullopt));
}

torch::CppFunction viaOut(const char* out_op,
                          std::optional<c10::KernelFunction> shape) {
  return torch::CppFunction::makeFromBoxedFunctor(
      std::make_unique<EmulateKernel>(out_op, std::move(shape)));
}

void runBoxed(const c10::OperatorHandle& op, const c10::OperatorHandle* out_op,
              torch::jit::Stack* stack) {
  if (out_op != nullptr) {
    runViaOut(op, *out_op, nullptr, cachedPlan<OutPlan>(op, out_op), stack);
  } else {
    runDirect(op, cachedPlan<Plan>(op, nullptr), stack);
  }
}

std::vector<std::pair<std::string, int64_t>> fallbackCalls() {
  std::vector<std::pair<std::string, int64_t>> calls;
  planCache<FallbackPlan>().forEach(
      [&](const c10::OperatorName& name, const FallbackPlan& plan) {
        calls.emplace_back(c10::toString(name), plan.calls.load());
      });
  return calls;
}

namespace detail {

at::Tensor AliasSet::alias(const at::Tensor& device, bool written,
                           bool borrowed) {
  if (device_ < 0) {
    device_ = device.device().index();
  } else {
    // What the device-generic kernels of other backends check: the
    // emulation would otherwise compute across devices without a word.
    TORCH_CHECK(device.device().index() == device_,
                "Expected all tensors to be on the same device, but found "
                "at least two devices, ",
                c10::Device(kDeviceType, device_), " and ", device.device(),
                "!");
  }
  c10::StorageImpl* impl = device.storage().unsafeGetStorageImpl();
  checkInBounds(device);
  c10::Storage host_storage;
  for (const auto& [known, host] : storages_) {
    if (known == impl) {
      host_storage = host;
      break;
    }
  }
  if (!host_storage) {
    void* data = impl->mutable_data();
    // Resizable through the CPU allocator: an out= argument that the CPU
    // kernel grows moves to host memory and is copied back once.
    host_storage = c10::Storage(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), impl->nbytes(),
        c10::DataPtr(data, c10::Device(c10::kCPU)),
        c10::GetAllocator(c10::kCPU), /*resizable=*/true));
    storages_.emplace_back(impl, host_storage);
    if (data != nullptr) {
      buffers_.push_back(data);
    }
  }
  auto host =
      tensorOver(host_storage, c10::DispatchKey::CPU, device.dtype(),
                 device.sizes(), device.strides(), device.storage_offset());
  entries_.push_back(
      {borrowed ? c10::MaybeOwned<at::Tensor>::borrowed(device)
                : c10::MaybeOwned<at::Tensor>::owned(std::in_place, device),
       host, impl->data(), written});
  return host;
}

bool AliasSet::reconcileWritten() {
  bool moved_any = false;
  for (auto& e : entries_) {
    if (!e.written) {
      continue;
    }
    c10::TensorImpl* host = e.host.unsafeGetTensorImpl();
    c10::TensorImpl* dev = e.device->unsafeGetTensorImpl();
    const bool moved = e.host.storage().data() != e.device_data;
    moved_any = moved_any || moved;
    if (moved) {
      c10::DeviceGuard guard(e.device->device());
      c10::StorageImpl* storage = e.device->storage().unsafeGetStorageImpl();
      const std::size_t nbytes = e.host.storage().nbytes();
      resizeStorageBytes(storage, nbytes);
      if (nbytes > 0) {
        at::Tensor bytes = tensorOver(e.host.storage(), c10::DispatchKey::CPU,
                                      caffe2::TypeMeta::Make<uint8_t>(),
                                      {static_cast<int64_t>(nbytes)}, {1}, 0);
        copyAsync(storage->mutable_data(), std::move(bytes), nbytes);
      }
    }
    if (moved || host->sizes() != dev->sizes() ||
        host->strides() != dev->strides() ||
        host->storage_offset() != dev->storage_offset()) {
      dev->set_sizes_and_strides(host->sizes(), host->strides(),
                                 host->storage_offset());
    }
  }
  return moved_any;
}

at::Tensor AliasSet::toDevice(const at::Tensor& result) {
  if (!result.defined() || result.device().type() != c10::kCPU) {
    return result;
  }
  for (const auto& e : entries_) {
    if (e.host.unsafeGetTensorImpl() == result.unsafeGetTensorImpl()) {
      return *e.device;
    }
  }
  const c10::StorageImpl* storage = result.storage().unsafeGetStorageImpl();
  for (const auto& e : entries_) {
    if (e.host.storage().unsafeGetStorageImpl() == storage &&
        storage->data() == e.device->storage().data()) {
      return tensorOver(e.device->storage(), c10::DispatchKey::PrivateUse1,
                        result.dtype(), result.sizes(), result.strides(),
                        result.storage_offset());
    }
  }
  return copies_.add(result, c10::Device(kDeviceType, device_));
}

void AliasSet::launchCopies() {
  copies_.launch();
}

bool ShapeCache::lookup(const Key& key, Results& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [known, results] : entries_) {
    if (known == key) {
      out = results;
      return true;
    }
  }
  return false;
}

void ShapeCache::insert(Key key, const Results& results) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() < kEntries) {
    entries_.emplace_back(std::move(key), results);
    return;
  }
  entries_[next_] = {std::move(key), results};
  next_ = (next_ + 1) % kEntries;
}

bool launchAndWait(c10::DeviceIndex device, c10::ArrayRef<const void*> buffers,
                   c10::function_ref<void()> fn, bool fresh_results) {
  return emulate::launchAndWait(device, buffers, fn, fresh_results);
}

at::Tensor allocateResult(at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::ScalarType dtype) {
  return at::detail::empty_strided_generic(
      sizes, strides, getDeviceAllocator(),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype);
}

void keyDefaults(ShapeCache::Key& key) {
  key.push_back(static_cast<int64_t>(c10::get_default_dtype_as_scalartype()));
  key.push_back(static_cast<int64_t>(
      c10::typeMetaToScalarType(c10::get_default_complex_dtype())));
}

namespace {

// The key of an optional argument: `none_tag` for None, else its value's.
template <class Optional>
bool keyOptional(ShapeCache::Key& key, const Optional& value,
                 int64_t none_tag) {
  if (!value.has_value()) {
    key.push_back(none_tag);
    return true;
  }
  return keyArg(key, *value);
}

}  // namespace

bool keyArg(ShapeCache::Key& key, const at::Tensor& t) {
  if (!t.defined()) {
    key.push_back(20);
    return true;
  }
  if (t.layout() != c10::kStrided) {
    return false;
  }
  const int64_t flags = (t.unsafeGetTensorImpl()->is_wrapped_number() ? 1 : 0) |
                        (t.is_conj() ? 2 : 0) | (t.is_neg() ? 4 : 0);
  key.insert(key.end(),
             {21, static_cast<int64_t>(t.device().type()),
              static_cast<int64_t>(t.scalar_type()), flags, t.dim()});
  key.append(t.sizes().begin(), t.sizes().end());
  key.append(t.strides().begin(), t.strides().end());
  key.push_back(t.storage_offset());
  return true;
}

bool keyArg(ShapeCache::Key& key, const std::optional<at::Tensor>& t) {
  return keyOptional(key, t, 20);
}

bool keyArg(ShapeCache::Key& key, int64_t value) {
  key.insert(key.end(), {2, value});
  return true;
}

bool keyArg(ShapeCache::Key& key, double value) {
  int64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  key.insert(key.end(), {3, bits});
  return true;
}

bool keyArg(ShapeCache::Key& key, bool value) {
  key.insert(key.end(), {4, value ? 1 : 0});
  return true;
}

bool keyArg(ShapeCache::Key& key, const c10::SymInt& value) {
  const std::optional<int64_t> concrete = value.maybe_as_int();
  return concrete.has_value() && keyArg(key, *concrete);
}

bool keyArg(ShapeCache::Key& key, at::IntArrayRef values) {
  key.insert(key.end(), {5, static_cast<int64_t>(values.size())});
  key.append(values.begin(), values.end());
  return true;
}

bool keyArg(ShapeCache::Key& key, c10::ArrayRef<double> values) {
  key.insert(key.end(), {10, static_cast<int64_t>(values.size())});
  for (const double value : values) {
    keyArg(key, value);
  }
  return true;
}

bool keyArg(ShapeCache::Key& key, at::OptionalIntArrayRef values) {
  return keyOptional(key, values, 1);
}

bool keyArg(ShapeCache::Key& key, c10::SymIntArrayRef values) {
  const std::optional<at::IntArrayRef> concrete =
      c10::asIntArrayRefSlowOpt(values);
  return concrete.has_value() && keyArg(key, *concrete);
}

bool keyArg(ShapeCache::Key& key, const at::Scalar& value) {
  if (value.isFloatingPoint()) {
    return keyArg(key, value.toDouble()) && keyArg(key, int64_t{30});
  }
  if (value.isBoolean()) {
    return keyArg(key, value.toBool());
  }
  if (value.isIntegral(/*includeBool=*/false) && !value.isSymbolic()) {
    return keyArg(key, value.toLong());
  }
  return false;  // complex, symbolic
}

bool keyArg(ShapeCache::Key& key, const std::optional<at::Scalar>& value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, at::ScalarType value) {
  key.insert(key.end(), {6, static_cast<int64_t>(value)});
  return true;
}

bool keyArg(ShapeCache::Key& key, std::optional<at::ScalarType> value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, std::optional<int64_t> value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, c10::string_view value) {
  key.insert(key.end(), {7, static_cast<int64_t>(value.size())});
  for (const char c : value) {
    key.push_back(c);
  }
  return true;
}

bool keyArg(ShapeCache::Key& key, std::optional<c10::string_view> value) {
  return keyOptional(key, value, 1);
}

TypedPlan typedPlan(const c10::FunctionSchema& schema) {
  TypedPlan plan;
  for (const auto& arg : schema.arguments()) {
    plan.written.push_back(arg.alias_info() != nullptr &&
                           arg.alias_info()->isWrite());
  }
  plan.allows_cpu_tensors = allowsCpuTensors(schema);
  return plan;
}

}  // namespace detail

}  // namespace accgen::runtime::emulate

namespace accgen::runtime {

void emulateFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  emulate::FallbackPlan& plan = emulate::planCache<emulate::FallbackPlan>().of(
      op, [&] { return std::make_unique<emulate::FallbackPlan>(op); });
  plan.calls.fetch_add(1, std::memory_order_relaxed);
  std::optional<emulate::DefaultGeneratorSwap> generator;
  if (plan.random_without_generator) {
    generator.emplace(emulate::callDevice(plan.direct, *stack));
  }
  if (plan.via_out && plan.via_out_fits.load(std::memory_order_relaxed)) {
    const emulate::ViaOut done =
        emulate::runViaOut(op, *plan.out, nullptr, *plan.via_out, stack,
                           /*keyed_only=*/true);
    if (done == emulate::ViaOut::kDone) {
      return;
    }
    if (done == emulate::ViaOut::kReshaped) {
      plan.via_out_fits.store(false, std::memory_order_relaxed);
    }
  }
  emulate::runDirect(op, plan.direct, stack);
}

}  // namespace accgen::runtime
