// The boxed argument representation (Note [Two argument representations]
// in accgen/runtime/detail/EmulateEngine.h): boxed registrations, kernel
// starters whose operator the typed one does not cover, and the emulate
// fallback.
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include <ATen/core/ivalue.h>

#include "Engine.h"
#include "accgen/runtime/CpuGenerator.h"

namespace accgen::runtime::emulate {
namespace {

// A Tensor?[] argument's elements. TorchScript hands it over as a generic
// list of IValues (None or Tensor), where eager code gives a typed list;
// IValue::toOptionalTensorList asserts on the generic one (a scripted
// `x[mask] = v` reaching index_put_). IValue::to reads both, as the
// dispatcher's own unboxing does.
c10::List<std::optional<at::Tensor>> optionalTensors(const c10::IValue& value) {
  return value.to<c10::List<std::optional<at::Tensor>>>();
}

}  // namespace

struct HostGenerators::Scopes {
  std::vector<std::unique_ptr<CpuGeneratorScope>> scopes;
};

HostGenerators::HostGenerators() : scopes_(std::make_unique<Scopes>()) {}
HostGenerators::~HostGenerators() = default;

void HostGenerators::borrow(const c10::FunctionSchema& schema,
                            torch::jit::Stack& stack, c10::DeviceIndex device) {
  const auto& arguments = schema.arguments();
  const std::size_t base = stack.size() - arguments.size();
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const c10::TypePtr& type = arguments[i].real_type();
    const auto* optional = type->castRaw<c10::OptionalType>();
    const c10::TypePtr& element =
        optional != nullptr ? optional->getElementType() : type;
    if (element->kind() != c10::TypeKind::GeneratorType) {
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
    for (const auto& s : scopes_->scopes) {
      if (!generator.has_value() ? s->device() == getDefaultGenerator(device)
                                 : s->device() == *generator) {
        scope = s.get();
      }
    }
    if (scope == nullptr) {
      scopes_->scopes.push_back(
          std::make_unique<CpuGeneratorScope>(generator, device));
      scope = scopes_->scopes.back().get();
    }
    value = scope->cpu();
  }
}

namespace detail {
namespace {

// The arguments of one boxed call: the top of `stack`.
class StackCall final : public Call {
 public:
  StackCall(const Rule& rule, torch::jit::Stack* stack)
      : rule_(rule), stack_(*stack), base_(stack->size() - rule.kinds.size()) {}

  void checkSameDevice() const override {
    emulate::checkSameDevice(args(), rule_.op.schema());
  }

  c10::DeviceIndex device() const override {
    for (std::size_t i = 0; i < rule_.kinds.size(); ++i) {
      const c10::IValue& value = stack_[base_ + i];
      c10::DeviceIndex device = -1;
      switch (rule_.kinds[i]) {
        case ArgKind::kTensor:
          if (value.isTensor()) {
            firstDevice(device, value.toTensor());
          }
          break;
        case ArgKind::kTensorList:
          if (!value.isNone()) {
            for (const at::Tensor& t : value.toTensorList()) {
              firstDevice(device, t);
            }
          }
          break;
        case ArgKind::kOptionalTensorList:
          if (!value.isNone()) {
            for (const std::optional<at::Tensor> t : optionalTensors(value)) {
              firstDevice(device, t);
            }
          }
          break;
        case ArgKind::kDevice:
          if (value.isDevice() && value.toDevice().type() == kDeviceType) {
            device = resolveDevice(value.toDevice().index());
          }
          break;
        default:
          break;
      }
      if (device >= 0) {
        return device;
      }
    }
    return -1;
  }

  bool key(ShapeCache::Key& key) const override {
    for (std::size_t i = 0; i < rule_.kinds.size(); ++i) {
      const c10::IValue& value = stack_[base_ + i];
      switch (rule_.kinds[i]) {
        case ArgKind::kTensor:
          if (!(value.isNone() ? keyArg(key, std::optional<at::Tensor>())
                               : keyArg(key, value.toTensor()))) {
            return false;
          }
          break;
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

  void shapes(ShapeCache::Results& out) override {
    // Only a rule with a shape function asks for shapes
    // (Note [How an emulated operator runs]).
    TORCH_INTERNAL_ASSERT(rule_.shape.has_value());
    torch::jit::Stack meta = metaArguments();
    rule_.shape->callBoxed(rule_.op, kMetaKeySet, &meta);
    for (const c10::IValue& r : meta) {
      collectShapes(r.toTensor(), out);
    }
  }

  void alias(AliasSet& aliases) override {
    host_.assign(stack_.begin() + static_cast<std::ptrdiff_t>(base_),
                 stack_.end());
    for (std::size_t i = 0; i < rule_.kinds.size(); ++i) {
      c10::IValue& value = host_[i];
      const bool written = rule_.written[i];
      switch (rule_.kinds[i]) {
        case ArgKind::kTensor:
          if (value.isTensor()) {
            value = hostArg(aliases, value.toTensor(), written);
          }
          break;
        case ArgKind::kTensorList:
          if (!value.isNone()) {
            c10::List<at::Tensor> list;
            list.reserve(value.toTensorList().size());
            for (const at::Tensor& t : value.toTensorList()) {
              list.push_back(hostArg(aliases, t, written));
            }
            value = std::move(list);
          }
          break;
        case ArgKind::kOptionalTensorList:
          if (!value.isNone()) {
            c10::List<std::optional<at::Tensor>> list;
            for (const std::optional<at::Tensor> t : optionalTensors(value)) {
              list.push_back(hostArg(aliases, t, written));
            }
            value = std::move(list);
          }
          break;
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
    if (rule_.has_generator) {
      generators_.emplace();
      generators_->borrow(rule_.op.schema(), host_, aliases.device());
    }
  }

  void runCpu() override { rule_.op.redispatchBoxed(kCpuKeySet, &host_); }

  void runCpuOut(c10::ArrayRef<at::Tensor> outs) override {
    for (const at::Tensor& out : outs) {
      host_.emplace_back(out);
    }
    rule_.out->redispatchBoxed(kCpuKeySet, &host_);
  }

  void mapResults(AliasSet& aliases) override {
    torch::jit::drop(stack_, rule_.kinds.size());
    for (c10::IValue& value : host_) {
      if (value.isTensor()) {
        value = aliases.toDevice(value.toTensor());
      } else if (value.isTensorList()) {
        c10::List<at::Tensor> mapped;
        for (const at::Tensor& t : value.toTensorList()) {
          mapped.push_back(aliases.toDevice(t));
        }
        value = std::move(mapped);
      }
      stack_.push_back(std::move(value));
    }
  }

  void takeResults(c10::ArrayRef<at::Tensor> results) override {
    torch::jit::drop(stack_, rule_.kinds.size());
    for (const at::Tensor& r : results) {
      stack_.emplace_back(r);
    }
  }

  void takeArguments(c10::ArrayRef<int> returned) override {
    torch::jit::Stack results;
    for (const int index : returned) {
      results.push_back(stack_[base_ + static_cast<std::size_t>(index)]);
    }
    torch::jit::drop(stack_, rule_.kinds.size());
    stack_.insert(stack_.end(), std::make_move_iterator(results.begin()),
                  std::make_move_iterator(results.end()));
  }

  void hostStack(torch::jit::Stack& stack) override {
    stack.insert(stack.end(), host_.begin(), host_.end());
  }

 private:
  c10::ArrayRef<c10::IValue> args() const {
    return c10::ArrayRef<c10::IValue>(stack_).slice(base_);
  }

  // The arguments as the shape computation takes them.
  torch::jit::Stack metaArguments() const {
    torch::jit::Stack meta;
    meta.reserve(rule_.kinds.size());
    for (std::size_t i = 0; i < rule_.kinds.size(); ++i) {
      const c10::IValue& value = stack_[base_ + i];
      switch (rule_.kinds[i]) {
        case ArgKind::kTensor:
          meta.push_back(value.isTensor()
                             ? c10::IValue(metaArg(value.toTensor()))
                             : value);
          break;
        case ArgKind::kTensorList:
          if (value.isNone()) {
            meta.push_back(value);
          } else {
            c10::List<at::Tensor> list;
            for (const at::Tensor& t : value.toTensorList()) {
              list.push_back(metaArg(t));
            }
            meta.emplace_back(std::move(list));
          }
          break;
        case ArgKind::kOptionalTensorList:
          if (value.isNone()) {
            meta.push_back(value);
          } else {
            c10::List<std::optional<at::Tensor>> list;
            for (const std::optional<at::Tensor> t : optionalTensors(value)) {
              list.push_back(metaArg(t));
            }
            meta.emplace_back(std::move(list));
          }
          break;
        case ArgKind::kGenerator:
          meta.emplace_back();
          break;
        case ArgKind::kDevice:
          meta.push_back(value.isDevice() &&
                                 value.toDevice().type() == kDeviceType
                             ? c10::IValue(c10::Device(c10::kMeta))
                             : value);
          break;
        default:
          meta.push_back(value);
          break;
      }
    }
    return meta;
  }

  // The key of an argument that is not a tensor, as the typed
  // representation keys the same value; false for kinds not keyed.
  static bool keyValue(const c10::IValue& v, ShapeCache::Key& key) {
    if (v.isNone()) {
      key.push_back(1);
      return true;
    }
    if (v.isInt()) {
      return keyArg(key, v.toInt());
    }
    if (v.isSymInt()) {
      return keyArg(key, v.toSymInt());
    }
    if (v.isDouble()) {
      return keyArg(key, v.toDouble());
    }
    if (v.isBool()) {
      return keyArg(key, v.toBool());
    }
    if (v.isIntList()) {
      return keyArg(key, at::IntArrayRef(v.toIntVector()));
    }
    if (v.isDoubleList()) {
      return keyArg(key, c10::ArrayRef<double>(v.toDoubleVector()));
    }
    if (v.isBoolList()) {
      const c10::List<bool> list = v.toBoolList();
      const c10::SmallVector<bool, 4> values(list.begin(), list.end());
      return keyBools(key, values);
    }
    if (v.isString()) {
      return keyArg(key, c10::string_view(v.toStringRef()));
    }
    return false;
  }

  const Rule& rule_;
  torch::jit::Stack& stack_;
  std::size_t base_;
  torch::jit::Stack host_;
  std::optional<HostGenerators> generators_;
};

// Rules by operator, made on first use and kept for the life of the
// process: the emulate fallback's, and those of boxed registrations without
// a shape function. Lookups share a lock; a rule is made outside it, and
// the first one made for an operator is kept.
class RuleCache {
 public:
  Rule& of(const c10::OperatorHandle& op) {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      const auto it = rules_.find(op.operator_name());
      if (it != rules_.end()) {
        return *it->second;
      }
    }
    auto rule = std::make_unique<Rule>(op, /*has_shape_function=*/false);
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto [it, inserted] = rules_.try_emplace(op.operator_name(), nullptr);
    if (inserted) {
      it->second = std::move(rule);
    }
    return *it->second;
  }

  template <class Fn>
  void forEach(Fn fn) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    for (const auto& [name, rule] : rules_) {
      fn(name, *rule);
    }
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<c10::OperatorName, std::unique_ptr<Rule>> rules_;
};

RuleCache& rules() {
  // Never destroyed: operators may still run during static destruction.
  static auto* cache = new RuleCache();
  return *cache;
}

// A boxed registration with a C++ shape function: its rule is its own.
class ShapedKernel final : public c10::OperatorKernel {
 public:
  explicit ShapedKernel(c10::KernelFunction shape) : shape_(std::move(shape)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet,
                  torch::jit::Stack* stack) {
    std::call_once(made_, [&] {
      rule_ = new Rule(op, /*has_shape_function=*/true);
      rule_->shape = shape_;
    });
    runStack(*rule_, stack);
  }

 private:
  c10::KernelFunction shape_;
  std::once_flag made_;
  Rule* rule_ = nullptr;  // kept for the life of the process
};

}  // namespace

Rule& ruleOf(const c10::OperatorHandle& op) {
  return rules().of(op);
}

void runStack(Rule& rule, torch::jit::Stack* stack) {
  if (C10_UNLIKELY(!runsOnHostAliases(rule))) {
    runWithoutHostAccess(rule.op, stack);  // Note [Host access]
    return;
  }
  StackCall call(rule, stack);
  run(rule, call);
}

void runBoxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  runStack(ruleOf(op), stack);
}

torch::CppFunction boxedKernel(c10::KernelFunction shape) {
  return torch::CppFunction::makeFromBoxedFunctor(
      std::make_unique<ShapedKernel>(std::move(shape)));
}

}  // namespace detail

torch::CppFunction boxedKernel() {
  return torch::CppFunction::makeFromBoxedFunction<&detail::runBoxed>();
}

std::vector<std::pair<std::string, int64_t>> fallbackCalls() {
  std::vector<std::pair<std::string, int64_t>> calls;
  detail::rules().forEach(
      [&](const c10::OperatorName& name, const detail::Rule& rule) {
        const int64_t n = rule.fallback_calls.load();
        if (n > 0) {
          calls.emplace_back(c10::toString(name), n);
        }
      });
  return calls;
}

}  // namespace accgen::runtime::emulate

namespace accgen::runtime {

// --8<-- [start:emulate-fallback]
// Note [Emulate fallback]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The emulate fallback is one boxed function, the m.fallback(...) of the
// PrivateUse1 key. Every operator it catches runs exactly as it would if
// the spec listed it as emulate (Note [How an emulated operator runs]);
// listing an operator changes how fast it is called (typed, with a C++
// shape function), never how it runs:
//  - Tensor arguments are viewed in place (host aliases over the same
//    bytes), never copied; in-place and out= arguments are written in
//    place.
//  - A view the CPU kernel returns comes back as a view of the device
//    tensor: torch.view_as_real(z)[:, 0] = 7 changes z on the device, which
//    the CPU fallback cannot do.
//  - A new result is made in device memory, by the CPU kernel itself or
//    through the out= overload once the operator learned its shapes for the
//    call's key (Note [Learned shapes] in Engine.cpp); it is copied once
//    only when the device cannot hold it. A structured operator reaches the
//    fallback as its out= overload (lgamma as lgamma.out: torch's own
//    default kernel computes the functional form through it), which writes
//    the device memory in place.
//  - Every kernel is one launch on the current stream, with access to
//    exactly the allocations it touches, so it also works under the
//    emulator's access guard. It is queued when its results are known
//    ahead (Note [Queued operators] in Launch.cpp); otherwise the host waits
//    for it, so operators whose output shapes depend on the data (nonzero,
//    boolean indexing) see their inputs complete.
//  - Random operators draw from the device's generators: those passed, or
//    the device's default one.
// Each call is counted by operator: torch.<device>.fallback_counts() lists
// every operator that ran through a fallback in the process, and how often.
// --8<-- [end:emulate-fallback]
void emulateFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  emulate::detail::Rule& rule = emulate::detail::ruleOf(op);
  rule.fallback_calls.fetch_add(1, std::memory_order_relaxed);
  emulate::detail::runStack(rule, stack);
}

}  // namespace accgen::runtime
