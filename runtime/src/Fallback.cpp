// The global fallbacks of operators a backend does not register: the CPU
// fallback (copies in and out), the error of `fallback: error`, and the
// call counts of these and of the emulate fallback (src/emulate/Boxed.cpp). The
// generated csrc/ops/RegisterFallback.cpp chooses between them.
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>
#include <c10/util/Exception.h>

#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/Runtime.h"
#include "emulate/Engine.h"

namespace accgen::runtime {
namespace {

// Calls of the CPU fallback, by operator.
class CpuCalls {
 public:
  void add(const c10::OperatorName& op) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++calls_[c10::toString(op)];
  }
  std::map<std::string, int64_t> snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int64_t> calls_;
};

CpuCalls& cpuCalls() {
  // Never destroyed: operators may still run during static destruction.
  static auto* calls = new CpuCalls();
  return *calls;
}

// Counts the call, and warns once per operator when
// <PREFIX>_WARN_FALLBACK=1.
void noteFallback(const c10::OperatorHandle& op) {
  cpuCalls().add(op.operator_name());
  static const bool enabled = [] {
    const char* value =
        std::getenv((std::string(kEnvPrefix) + "_WARN_FALLBACK").c_str());
    return value != nullptr && std::string(value) == "1";
  }();
  if (!enabled) {
    return;
  }
  static std::mutex mutex;
  static auto* seen = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  const std::string name = c10::toString(op.operator_name());
  if (seen->insert(name).second) {
    TORCH_WARN(name, " ran on the CPU (fallback of device '", kDeviceName,
               "'): its arguments were copied to the host and its results "
               "back");
  }
}

// The device of the first device tensor argument, else the current one.
c10::DeviceIndex deviceOfArguments(const c10::OperatorHandle& op,
                                   const torch::jit::Stack& stack) {
  const std::size_t n = op.schema().arguments().size();
  for (std::size_t i = stack.size() - n; i < stack.size(); ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor() && value.toTensor().defined() &&
        value.toTensor().device().type() == kDeviceType) {
      return value.toTensor().device().index();
    }
  }
  return currentDevice();
}

}  // namespace

// --8<-- [start:cpu-fallback]
namespace {

// Note [Unannotated batch norm statistics]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten::native_batch_norm updates its running_mean and running_var in place
// when training, but its schema does not mark them as written (`Tensor?`,
// not `Tensor(a!)?`, in torch 2.13 to 2.15), so at::native::cpu_fallback
// leaves the device's statistics as they were. The operator goes to
// aten::_native_batch_norm_legit instead, the same computation with the
// statistics marked written, which the fallback copies back.
// test_remote_backend.py::test_batch_norm_schema_still_hides_its_writes
// shows the schema still hides them.
bool redirectedBatchNorm(const c10::OperatorHandle& op,
                         torch::jit::Stack* stack) {
  if (op.schema().name() != "aten::native_batch_norm" ||
      !op.schema().overload_name().empty()) {
    return false;
  }
  auto args = torch::jit::last(*stack, 8);
  if (!args[3].isTensor() || !args[4].isTensor() || !args[5].toBool()) {
    return false;  // nothing to update
  }
  static const c10::OperatorHandle legit =
      c10::Dispatcher::singleton().findSchemaOrThrow(
          "aten::_native_batch_norm_legit", "");
  legit.callBoxed(stack);
  return true;
}

}  // namespace

void cpuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (redirectedBatchNorm(op, stack)) {
    return;
  }
  // A view shares its argument's storage, which a copy to the host cannot
  // give it; it reads no data, so the emulation engine makes it on host
  // aliases of the device tensors, even where the host cannot address
  // device memory (Note [Host access]).
  emulate::detail::Rule& rule = emulate::detail::ruleOf(op);
  if (rule.results == emulate::detail::Rule::Results::kViews) {
    emulate::detail::runStack(rule, stack);
    return;
  }
  noteFallback(op);
  // Note [Device misuse] in src/emulate/Aliases.cpp: the copies would hide what
  // the device would refuse.
  const auto args = torch::jit::last(*stack, op.schema().arguments().size());
  emulate::checkSameDevice(args, op.schema());
  for (const c10::IValue& arg : args) {
    if (arg.isTensor()) {
      emulate::checkInBounds(arg.toTensor());
    }
  }
  emulate::HostGenerators generators;
  generators.borrow(op.schema(), *stack, deviceOfArguments(op, *stack));
  at::native::cpu_fallback(op, stack);
}
// --8<-- [end:cpu-fallback]

// Note [Host access] in Driver.cpp.
void runWithoutHostAccess(const c10::OperatorHandle& op,
                          torch::jit::Stack* stack) {
  TORCH_CHECK(
      kHostCopies, kDeviceName, ": ", op.operator_name(),
      " runs as CPU code over device memory (an `emulate` entry, the emulate "
      "fallback or emulate::call), but the host cannot address this "
      "driver's device memory (accDevAttrHostAddressable is 0). Write a "
      "kernel for it (kind: kernel), run it on the CPU (kind: fallback), or "
      "set features.host_copies: true in specs/backend.yaml to run such "
      "operators through the CPU fallback with copies.");
  cpuFallback(op, stack);
}

std::vector<FallbackCount> fallbackCounts() {
  std::vector<FallbackCount> counts;
  for (const auto& [op, calls] : cpuCalls().snapshot()) {
    counts.push_back({op, "cpu", calls});
  }
  for (auto& [op, calls] : emulate::fallbackCalls()) {
    counts.push_back({std::move(op), "emulate", calls});
  }
  return counts;
}

// --8<-- [start:error-fallback]
void notImplementedFallback(const c10::OperatorHandle& op,
                            torch::jit::Stack* /*stack*/) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      false, "operator ", op.operator_name(),
      " is not implemented for device '", kDeviceName,
      "'; add it to specs/operators.yaml (kind emulate, kernel or fallback)");
}
// --8<-- [end:error-fallback]

}  // namespace accgen::runtime
