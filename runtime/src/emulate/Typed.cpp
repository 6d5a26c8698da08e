// The typed argument representation (Note [Two argument representations]
// in accgen/runtime/detail/EmulateEngine.h): the operator's own C++
// parameters, erased to TypedArgs by its TypedKernel, which brings the
// calls made with its signature (TypedOps).
#include "Engine.h"

namespace accgen::runtime::emulate::detail {
namespace {

class TypedCall final : public Call {
 public:
  TypedCall(const Rule& rule, const TypedArg* args, std::size_t count,
            const TypedOps& ops, void* results)
      : rule_(rule), args_(args), count_(count), ops_(ops), results_(results) {}

  void checkSameDevice() const override {
    SameDeviceCheck check;
    for (std::size_t i = 0; i < count_; ++i) {
      const void* value = args_[i].value;
      switch (args_[i].kind) {
        case TypedKind::kTensor:
          check.add(*static_cast<const at::Tensor*>(value),
                    i < rule_.written.size() && rule_.written[i]);
          break;
        case TypedKind::kOptionalTensor:
          check.add(*static_cast<const std::optional<at::Tensor>*>(value));
          break;
        case TypedKind::kTensorListRef:
        case TypedKind::kTensorList:
          check.add(listOf(args_[i]));
          break;
        case TypedKind::kValue:
          break;
      }
    }
    check.finish();
  }

  c10::DeviceIndex device() const override {
    c10::DeviceIndex device = -1;
    for (std::size_t i = 0; i < count_ && device < 0; ++i) {
      const void* value = args_[i].value;
      switch (args_[i].kind) {
        case TypedKind::kTensor:
          firstDevice(device, *static_cast<const at::Tensor*>(value));
          break;
        case TypedKind::kOptionalTensor:
          firstDevice(device,
                      *static_cast<const std::optional<at::Tensor>*>(value));
          break;
        case TypedKind::kTensorListRef:
        case TypedKind::kTensorList:
          for (const at::Tensor& t : listOf(args_[i])) {
            firstDevice(device, t);
          }
          break;
        case TypedKind::kValue:
          break;
      }
    }
    return device;
  }

  bool key(ShapeCache::Key& key) const override {
    for (std::size_t i = 0; i < count_; ++i) {
      const void* value = args_[i].value;
      bool keyed = false;
      switch (args_[i].kind) {
        case TypedKind::kTensor:
          keyed = keyArg(key, *static_cast<const at::Tensor*>(value));
          break;
        case TypedKind::kOptionalTensor:
          keyed = keyArg(key,
                         *static_cast<const std::optional<at::Tensor>*>(value));
          break;
        case TypedKind::kTensorListRef:
        case TypedKind::kTensorList:
          keyed = false;  // as in the boxed representation
          break;
        case TypedKind::kValue:
          keyed = args_[i].key(key, value);
          break;
      }
      if (!keyed) {
        return false;
      }
    }
    return true;
  }

  void shapes(ShapeCache::Results& out) override { ops_.shapes(args_, out); }

  void alias(AliasSet& aliases) override {
    host_.clear();
    host_.resize(count_);
    for (std::size_t i = 0; i < count_; ++i) {
      const void* value = args_[i].value;
      const bool written = i < rule_.written.size() && rule_.written[i];
      switch (args_[i].kind) {
        case TypedKind::kTensor:
          host_[i].tensor =
              hostArg(aliases, *static_cast<const at::Tensor*>(value), written);
          break;
        case TypedKind::kOptionalTensor:
          host_[i].tensor = hostArg(
              aliases, *static_cast<const std::optional<at::Tensor>*>(value),
              written);
          break;
        case TypedKind::kTensorListRef:
        case TypedKind::kTensorList:
          host_[i].list = hostArg(aliases, listOf(args_[i]), written);
          break;
        case TypedKind::kValue:
          break;
      }
    }
  }

  void runCpu() override { ops_.run_cpu(args_, host_.data(), results_); }

  void runCpuOut(c10::ArrayRef<at::Tensor> outs) override {
    // The out= kernel writes `outs` through their own TensorImpls.
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
    ops_.run_cpu_out(*rule_.out, args_, host_.data(),
                     const_cast<at::Tensor*>(outs.data()));
  }

  void mapResults(AliasSet& aliases) override {
    ops_.map_results(args_, host_.data(), count_, aliases, results_);
  }

  void takeResults(c10::ArrayRef<at::Tensor> results) override {
    ops_.take_results(results, results_);
  }

  void takeArguments(c10::ArrayRef<int> returned) override {
    ops_.take_arguments(args_, returned, results_);
  }

  void hostStack(torch::jit::Stack& stack) override {
    ops_.box(args_, host_.data(), stack);
  }

 private:
  static at::ITensorListRef listOf(const TypedArg& arg) {
    if (arg.kind == TypedKind::kTensorList) {
      return at::ITensorListRef(*static_cast<const at::TensorList*>(arg.value));
    }
    return *static_cast<const at::ITensorListRef*>(arg.value);
  }

  const Rule& rule_;
  const TypedArg* args_;
  std::size_t count_;
  const TypedOps& ops_;
  void* results_;
  c10::SmallVector<HostValue, 6> host_;
};

}  // namespace

void runTyped(Rule& rule, const TypedArg* args, std::size_t count,
              const TypedOps& ops, void* results) {
  TypedCall call(rule, args, count, ops, results);
  run(rule, call);
}

at::Tensor& argumentFor(const TypedArg* args, const HostValue* host,
                        std::size_t count, const at::Tensor& host_result,
                        const char* op) {
  for (std::size_t i = 0; i < count; ++i) {
    if (args[i].kind == TypedKind::kTensor && host[i].tensor.has_value() &&
        host[i].tensor->unsafeGetTensorImpl() ==
            host_result.unsafeGetTensorImpl()) {
      // The argument is the caller's Tensor& (or const Tensor&) parameter.
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
      return *const_cast<at::Tensor*>(
          static_cast<const at::Tensor*>(args[i].value));
    }
  }
  TORCH_INTERNAL_ASSERT(false, op, " returned a reference to no argument");
}

}  // namespace accgen::runtime::emulate::detail
