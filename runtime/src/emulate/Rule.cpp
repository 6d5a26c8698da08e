// What the engine knows of an operator, and how it runs it.
#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>

#include <ATen/core/function_schema.h>
#include <ATen/core/jit_type.h>

#include "Engine.h"

namespace accgen::runtime::emulate::detail {
namespace {

bool isGeneratorType(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::GeneratorType) {
    return true;
  }
  const auto* optional = type->castRaw<c10::OptionalType>();
  return optional != nullptr &&
         optional->getElementType()->kind() == c10::TypeKind::GeneratorType;
}

ArgKind kindOf(const c10::Argument& arg) {
  c10::TypePtr type = arg.real_type();
  if (isGeneratorType(type)) {
    return ArgKind::kGenerator;
  }
  if (const auto* optional = type->castRaw<c10::OptionalType>()) {
    type = optional->getElementType();
  }
  if (type->kind() == c10::TypeKind::TensorType) {
    return ArgKind::kTensor;
  }
  if (const auto* list = type->castRaw<c10::ListType>()) {
    const c10::TypePtr& elem = list->getElementType();
    if (elem->kind() == c10::TypeKind::TensorType) {
      return ArgKind::kTensorList;
    }
    if (const auto* opt = elem->castRaw<c10::OptionalType>();
        opt != nullptr &&
        opt->getElementType()->kind() == c10::TypeKind::TensorType) {
      return ArgKind::kOptionalTensorList;
    }
  }
  if (type->kind() == c10::TypeKind::DeviceObjType) {
    return ArgKind::kDevice;
  }
  return ArgKind::kOther;
}

// Operators that take CPU tensors beside device tensors by design, as on
// CUDA (Note [Device misuse]): copies between devices, and the split points
// of tensor_split, which must be on the CPU.
bool allowsCpuTensors(const c10::FunctionSchema& schema) {
  static const std::set<std::string, std::less<>> kOps = {
      "aten::_copy_from", "aten::_copy_from_and_resize", "aten::_to_copy",
      "aten::copy_", "aten::tensor_split"};
  return kOps.count(schema.name()) != 0;
}

// Whether `o` is the out= form of `f`: every other argument is one of f's,
// of the same name and type, and it writes one Tensor per result.
bool writesResultsOf(const c10::FunctionSchema& f,
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

// The overloads of operator `name` that have out= arguments (add.out,
// topk.values), from an index of the dispatcher's operators made on first
// use.
const std::vector<c10::OperatorName>& outOverloadsOf(const std::string& name) {
  static const auto* const index = [] {
    auto* by_name =
        new std::unordered_map<std::string, std::vector<c10::OperatorName>>();
    c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& op : dispatcher.getAllOpNames()) {
      const auto handle = dispatcher.findOp(op);
      if (handle.has_value() && handle->hasSchema() &&
          std::any_of(handle->schema().arguments().begin(),
                      handle->schema().arguments().end(),
                      [](const c10::Argument& arg) { return arg.is_out(); })) {
        (*by_name)[op.name].push_back(op);
      }
    }
    return by_name;
  }();
  static const std::vector<c10::OperatorName> kNone;
  const auto it = index->find(name);
  return it == index->end() ? kNone : it->second;
}

// Whether `op` is functional with only new tensor results, and its shapes
// can be known ahead of its kernel.
bool computableThroughOut(const c10::OperatorHandle& op) {
  const c10::FunctionSchema& f = op.schema();
  if (f.returns().empty() || f.is_mutable() ||
      op.hasTag(at::Tag::dynamic_output_shape)) {
    return false;
  }
  for (const auto& r : f.returns()) {
    if (r.alias_info() != nullptr ||
        r.real_type()->kind() != c10::TypeKind::TensorType) {
      return false;
    }
  }
  return true;
}

// The out= overload of `op` that computes its results in place, if it has
// one with a kernel for the CPU: its own, or a CompositeExplicitAutograd
// one. Not the out= overloads torch generates for functional operators
// (tagged `generated`, such as native_batch_norm_backward.out): they run
// the functional CPU kernel and copy its results into the out= tensors,
// which rule 3 does without the copies (Note [Kernel results in device
// memory]), and their queued form is rule 3's (Note [Learned shapes]).
std::optional<c10::OperatorHandle> outOverloadFor(
    const c10::OperatorHandle& op) {
  for (const c10::OperatorName& name : outOverloadsOf(op.schema().name())) {
    auto candidate = c10::Dispatcher::singleton().findOp(name);
    if (candidate.has_value() && !candidate->hasTag(at::Tag::generated) &&
        (candidate->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
         candidate->hasKernelForDispatchKey(
             c10::DispatchKey::CompositeExplicitAutograd)) &&
        writesResultsOf(op.schema(), candidate->schema())) {
      return candidate;
    }
  }
  return std::nullopt;
}

// The argument a returned Tensor(a!) is: the written argument of its alias
// set, or -1.
int writtenArgumentFor(const c10::FunctionSchema& schema,
                       const c10::Argument& result) {
  const c10::AliasInfo* info = result.alias_info();
  if (info == nullptr || !info->isWrite() ||
      result.real_type()->kind() != c10::TypeKind::TensorType) {
    return -1;
  }
  for (std::size_t i = 0; i < schema.arguments().size(); ++i) {
    const c10::Argument& arg = schema.arguments()[i];
    if (arg.alias_info() != nullptr && arg.alias_info()->isWrite() &&
        arg.real_type()->kind() == c10::TypeKind::TensorType &&
        arg.alias_info()->beforeSets() == info->beforeSets()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// What the results of an operator are (Rule::Results).
Rule::Results resultsOf(const c10::FunctionSchema& schema) {
  const auto& returns = schema.returns();
  const auto view = [](const c10::Argument& r) {
    return r.alias_info() != nullptr && !r.alias_info()->isWrite();
  };
  if (!returns.empty() && !schema.is_mutable() &&
      std::all_of(returns.begin(), returns.end(), view)) {
    return Rule::Results::kViews;
  }
  if (schema.is_mutable() &&
      std::all_of(returns.begin(), returns.end(), [&](const auto& r) {
        return writtenArgumentFor(schema, r) >= 0;
      })) {
    return Rule::Results::kArguments;
  }
  return Rule::Results::kOther;
}

}  // namespace

// --8<-- [start:how-an-emulated-operator-runs]
// Note [How an emulated operator runs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every emulated operator runs by this one rule, whether the spec lists it
// (kind emulate), a kernel starter calls it (emulate::call) or the emulate
// fallback catches it. The generated registrations state facts only: the
// operator and, for the functional member of a structured group, its C++
// shape function. How it is called (typed or boxed, Note [Two argument
// representations]) changes nothing of it.
//  0. A pointwise operator whose CPU kernel is ATen's structured class over
//     one DispatchStub (the table detail/StructuredLoops.def: add, mul,
//     div, exp, sigmoid, addcdiv, threshold_backward and more, with their
//     in-place and out= forms) runs that class on the device tensors
//     themselves when its loop computes what the CPU kernel would (Note
//     [Structured loops on the device] in Loops.cpp): meta() builds the
//     TensorIterator over the device tensors and allocates the result on
//     the device, and impl() calls the stub, whose device entry runs the
//     CPU loop on the device memory as a kernel on the stream. No host
//     aliases, no shape cache, no second TensorIterator. Every other call
//     of these operators (operands of another dtype than the computation's,
//     other than CPU scalars; a result to resize or cast into; an error in
//     meta(); large work or a busy stream; a graph capture; a device the
//     host cannot address) runs by the rules below.
//     torch.<device>.structured_loop_counts() counts the calls that ran
//     their loop, by operator.
//  1. A functional operator whose registration brings its C++ shape
//     function (at::meta::X, through a generated shape_X function), or
//     that ran before with the same key (Note [Learned shapes]), whose
//     results are new tensors, whose result shapes do not depend on the
//     data (no dynamic_output_shape tag), and that has an out= overload
//     with a CPU (or CompositeExplicitAutograd) kernel taking the same
//     arguments (by name and type, in their order) and then one Tensor
//     out= argument per result, is computed through that overload: its
//     results are allocated on the device with the shapes and dtypes the
//     shape function gives (kept per key, Note [Shape cache]), and the out=
//     kernel writes them in place. No copy. Not through an out= overload
//     torch generates (tagged generated: native_batch_norm_backward.out),
//     which runs the functional CPU kernel and copies its results: rule 3
//     makes them without the copies. add.Tensor, mm, sum.dim_IntList,
//     _softmax and topk (through topk.values) run this way. The shape
//     function of a structured operator is the first step of its CPU
//     kernel, so the results are the CPU's in every respect. The Meta
//     kernel is not used instead: for most aten operators it is a Python
//     function (torch/_meta_registrations.py), a hundred times slower and
//     holding the GIL, and for some it disagrees with the CPU kernel
//     (mse_loss_backward on int32 tensors gives int64 results).
//  2. When the shape function raises, or the out= kernel resizes a result
//     it was given (it wanted another shape than the meta one:
//     mse_loss.out computes the elementwise loss into it, then reduces),
//     the call runs as in 3, which raises the CPU kernel's own error or
//     computes the right result; after a resize the operator runs as in 3
//     from then on.
//  3. Every other operator runs its CPU kernel on host aliases of the
//     device tensors: in-place and out= forms write the device memory, view
//     forms return views of it, and new results (nonzero, masked_select,
//     _unique2, and the first call with a key of an operator that learns
//     its shapes) are allocated by the CPU kernel in device memory and
//     become the device tensors (Note [Kernel results in device memory] in
//     Allocator.cpp); a result the device could not hold is computed into
//     host memory and copied to the device once, by a kernel on the stream.
//     Data-dependent shapes need no special case.
// Whether the host waits for the kernel is Note [Queued operators] in
// Launch.cpp: an in-place form's shape function (at::meta::add_) checks its
// arguments before it is queued.
// A random operator without a generator argument (native_dropout) draws
// from the device's default generator (Note [Device generators on CPU
// kernels]), and the operators that take CPU tensors by design (copies,
// tensor_split) skip the same-device check (Note [Device misuse]).
// --8<-- [end:how-an-emulated-operator-runs]
Rule::Rule(const c10::OperatorHandle& handle, bool has_shape)
    : op(handle), has_shape_function(has_shape) {
  const c10::FunctionSchema& schema = op.schema();
  for (const auto& arg : schema.arguments()) {
    kinds.push_back(kindOf(arg));
    has_generator = has_generator || kinds.back() == ArgKind::kGenerator;
    written.push_back(arg.alias_info() != nullptr &&
                      arg.alias_info()->isWrite());
  }
  allows_cpu_tensors = allowsCpuTensors(schema);
  random_without_generator =
      !has_generator && op.hasTag(at::Tag::nondeterministic_seeded);
  results = resultsOf(schema);
  if (results == Results::kArguments) {
    for (const auto& r : schema.returns()) {
      returned_argument.push_back(writtenArgumentFor(schema, r));
    }
  }
  // Note [Learned shapes]: an operator whose results would depend on more
  // than its key (random draws, a device argument, CPU tensors by design,
  // data-dependent shapes) learns nothing.
  may_learn = !random_without_generator && !has_generator &&
              !allows_cpu_tensors &&
              !op.hasTag(at::Tag::dynamic_output_shape) &&
              std::none_of(kinds.begin(), kinds.end(),
                           [](ArgKind k) { return k == ArgKind::kDevice; });
  functional = computableThroughOut(op);
  if (!functional) {
    return;
  }
  learns_shapes = !has_shape && may_learn;
  if (!has_shape && !learns_shapes) {
    return;
  }
  out = outOverloadFor(op);
  if (!out.has_value()) {
    return;
  }
  // The operator's arguments in their order, then the out= arguments: what
  // a typed call of the overload needs, and every aten out= overload does.
  std::size_t next = 0;
  for (const auto& arg : out->schema().arguments()) {
    if (!arg.is_out() && *schema.argumentIndexWithName(arg.name()) != next++) {
      out.reset();
      return;
    }
  }
  via_out.store(true);
}

Rule& typedRule(const c10::OperatorHandle& op, bool has_shape_function) {
  // Never destroyed: operators may still run during static destruction.
  return *new Rule(op, has_shape_function);
}

bool runsOnHostAliases(const Rule& rule) noexcept {
  return hostComputes() || rule.results == Rule::Results::kViews;
}

}  // namespace accgen::runtime::emulate::detail
