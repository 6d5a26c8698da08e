// The operator emitter: every registration of operators.yaml and
// autocast.yaml as C++ under csrc/ops/ (DESIGN.md, "Operator registration
// kinds"), plus the user-owned kernel starters under kernels/.
//
// Emulated execution itself, the builtin operators and the fallbacks' bodies
// are accgen's runtime (runtime/), the same for every backend.
//
//   RegisterEmulate_<k>.cpp  `emulate` operators, kEmulateShardSize a file
//   KernelDecls.h            user kernels and custom-op bodies, declared
//   RegisterKernels.cpp      `kernel` wrappers for whole groups
//   RegisterStubs.cpp        `stub` registrations
//   RegisterFallback.cpp     per-operator `fallback` and the global policy
//   CustomOps.cpp            `custom:` operators
//   Autocast.cpp             autocast.yaml (features.autocast)
//
// Decisions live here (which way each operator is emulated, what a wrapper
// derives from its group's primary form); the text is in
// templates/backend/csrc/ops/ and templates/kernels/.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "generator/emit/emitters.h"
#include "generator/emit/operators_support.h"
#include "generator/support/diagnostics.h"

namespace accgen::emit {
namespace {

using nlohmann::json;
using schema::SchemaKind;

// Registrations per RegisterEmulate_<k>.cpp: large enough not to drown the
// build in per-file overhead (each shard loads the precompiled torch headers
// and parses the per-operator meta headers once), small enough that two
// cores build a large backend's shards in parallel with the rest.
constexpr std::size_t kEmulateShardSize = 120;

// A shape function's name: wrapper_add_Tensor -> shape_add_Tensor.
std::string shapeName(const model::Registration& r) {
  const std::string prefix = "wrapper_";
  std::string name = r.wrapper_name;
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  return "shape_" + name;
}

// An emulated operator's registration states facts only: the operator
// (its at::_ops struct) and, for the functional and in-place members of a
// structured group, its C++ shape function (at::meta). How it runs is the
// runtime's decision, by the rule every emulated operator follows (Note [How an
// emulated operator runs] in runtime/src/emulate/Rule.cpp): a shape
// function spares it the Meta kernel, often a Python meta function a
// hundred times slower.
// An entry emulated through its at::_ops struct `ops`, without a shape
// function.
json kernelEntry(const std::string& name, const std::string& ops) {
  return {{"name", name}, {"shape", ""},      {"has_shape", false},
          {"hook", ""},   {"is_hook", false}, {"ops", ops}};
}

json emulateEntry(const model::Registration& r,
                  std::vector<std::string>& headers, json& shapes) {
  const schema::NativeFunction& fn = *r.function;
  json entry = kernelEntry(r.fullName(), ops::opsStruct(r.schema()));
  headers.push_back(ops::opsHeader(r.schema()));
  // Shapes that depend on the data (index with a boolean mask) have no
  // shape function that could give them ahead of the kernel.
  const bool dynamic_shape = std::find(fn.tags.begin(), fn.tags.end(),
                                       "dynamic_output_shape") != fn.tags.end();
  if ((r.role == SchemaKind::kFunctional || r.role == SchemaKind::kInplace) &&
      !fn.structured_delegate.empty() && !dynamic_shape) {
    entry["has_shape"] = true;
    entry["shape"] = shapeName(r);
    headers.push_back(ops::metaHeader(r.schema()));
    shapes.push_back({{"name", r.fullName()},
                      {"decl", r.signature.decl(shapeName(r))},
                      {"call", ops::metaFunction(r.schema(), r.signature) +
                                   "(" + ops::callArgs(r.signature) + ")"}});
  }
  return entry;
}

// The entry of a hook operator (Note [Hook operators] in
// runtime/include/accgen/runtime/HookOps.h): the runtime's function.
json hookEntry(const std::string& name, const char* function) {
  return {{"name", name},     {"shape", ""},     {"has_shape", false},
          {"hook", function}, {"is_hook", true}, {"ops", ""}};
}

// The emulated operators, the hook operators the spec does not give a
// kernel of their own, and, under the `emulate` global fallback, the
// shadowed operators it does not list. A hook's group brings no other
// member: the other forms (convolution_overrideable.out) are composites of
// the hook.
void appendEmulate(const model::Backend& backend,
                   std::vector<OutputFile>& files) {
  std::vector<std::pair<std::string, const model::Registration*>> members;
  std::vector<std::pair<std::string, std::string>> shadowed;  // name, ops
  if (backend.fallback() == spec::FallbackPolicy::kEmulate) {
    for (const model::ShadowedOperator& op : model::shadowedOperators()) {
      if (backend.findRegistration(op.name) == nullptr) {
        members.emplace_back(op.name, nullptr);
        shadowed.emplace_back(op.name, op.ops);
      }
    }
  }
  for (const auto& op : backend.operators()) {
    if (op.kind != spec::OpKind::kEmulate) continue;
    const bool hook_group =
        std::any_of(op.members.begin(), op.members.end(), [](const auto& m) {
          return model::hookFunction(m.fullName()) != nullptr;
        });
    for (const auto& m : op.members) {
      if (hook_group && model::hookFunction(m.fullName()) == nullptr) continue;
      members.emplace_back(m.fullName(), &m);
    }
  }
  for (const model::HookOperator& hook : model::hookOperators()) {
    if (backend.findRegistration(hook.name) == nullptr) {
      members.emplace_back(hook.name, nullptr);
    }
  }
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::size_t shards =
      (members.size() + kEmulateShardSize - 1) / kEmulateShardSize;
  for (std::size_t k = 0; k < shards; ++k) {
    std::vector<std::string> headers;
    json entries = json::array();
    json shapes = json::array();
    const std::size_t end =
        std::min(members.size(), (k + 1) * kEmulateShardSize);
    for (std::size_t i = k * kEmulateShardSize; i < end; ++i) {
      const auto& [name, registration] = members[i];
      const std::string& listed = members[i].first;
      const auto shadow =
          std::find_if(shadowed.begin(), shadowed.end(),
                       [&](const auto& o) { return o.first == listed; });
      if (const char* hook = model::hookFunction(name)) {
        entries.push_back(hookEntry(name, hook));
      } else if (shadow != shadowed.end()) {
        entries.push_back(kernelEntry(name, "at::_ops::" + shadow->second));
        headers.push_back("ATen/ops/" + name.substr(0, name.find('.')) +
                          "_ops.h");
      } else {
        entries.push_back(emulateEntry(*registration, headers, shapes));
      }
    }
    json data = {{"shard", std::to_string(k)},
                 {"shard_count", std::to_string(shards)},
                 {"headers", ops::sortedUnique(std::move(headers))},
                 {"shapes", shapes},
                 {"has_shapes", !shapes.empty()},
                 {"entries", entries}};
    OutputFile file = ops::backendFile(
        "csrc/ops/RegisterEmulate_" + std::to_string(k) + ".cpp",
        std::move(data));
    // One template for every shard.
    file.template_name = "backend/csrc/ops/RegisterEmulate.cpp.mustache";
    files.push_back(std::move(file));
  }
}

// "self, other" without the out arguments; the out arguments' names.
std::pair<std::string, std::vector<std::string>> splitOut(
    const schema::CppSignature& sig) {
  std::string args;
  std::vector<std::string> outs;
  for (const auto& b : sig.arguments) {
    if (b.argument != nullptr && b.argument->is_out) {
      outs.push_back(b.name);
      continue;
    }
    args += (args.empty() ? "" : ", ") + b.name;
  }
  return {args, outs};
}

// --8<-- [start:stubs-of-structured-operators]
// Note [Stubs of structured operators]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The CPU kernel of an unstructured out= operator (abs_out) is an ordinary
// device-generic function: the stub entry registers it as it is. A
// structured one (sin.out) is a class, at::native::structured_sin_out, whose
// meta() builds a TensorIterator and calls set_output_*() for each result,
// and whose impl() calls the stub. The registration instantiates it with
// the out= tensor as its output (IntoOutput in RegisterStubs.cpp: the
// tensor is resized, and restrided, like any out= argument), which is what
// torchgen does for in-tree backends. Only TensorIterator-based classes
// with one output and no precomputed values fit that shape; the backend
// model (accgen validate as well as accgen generate) refuses other
// operators as stubs, and operators whose kernel is not an out= form (abs,
// whose composite kernel calls abs.out), with a note naming each one's
// at::native function (stubProblem in generator/model/build.cpp). The
// functional and in-place forms reach the out= registration through ATen's
// composite kernels.
// --8<-- [end:stubs-of-structured-operators]
void appendStubs(const model::Backend& backend,
                 std::vector<OutputFile>& files) {
  json entries = json::array();
  std::vector<std::string> headers;
  std::vector<std::string> stubs;
  for (const auto& op : backend.operators()) {
    if (op.kind != spec::OpKind::kStub) continue;
    for (const auto& m : op.members) {
      const std::string& native = op.stub_native;
      auto [args, outs] = splitOut(m.signature);
      const bool structured = m.function->structured;
      headers.push_back("ATen/ops/" + m.schema().baseName() + "_native.h");
      // Without a checked stub name its header is unknown: the build then
      // fails with the stub's name in the message.
      if (!op.stub_header.empty()) headers.push_back(op.stub_header);
      json entry = ops::returnsData(m.signature);
      entry.update({{"name", m.fullName()},
                    {"stub", op.stub},
                    {"wrapper", m.wrapper_name},
                    {"decl", m.signature.decl(m.wrapper_name)},
                    {"native", "at::native::" + native},
                    {"args", ops::callArgs(m.signature)},
                    {"structured", structured},
                    {"structured_class",
                     structured ? "at::native::structured_" + native : ""},
                    {"meta_args", args},
                    {"out", structured ? outs.at(0) : ""}});
      entries.push_back(std::move(entry));
      stubs.push_back(op.stub);
    }
  }
  if (entries.empty()) return;
  files.push_back(
      ops::backendFile("csrc/ops/RegisterStubs.cpp",
                       {{"entries", entries},
                        {"stubs", ops::sortedUnique(std::move(stubs))},
                        {"headers", ops::sortedUnique(std::move(headers))}}));
}

// --8<-- [start:error-policy-keeps]
// Note [Operators the error policy keeps]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Under `fallback: error` a backend still has to create, print and copy
// tensors before its spec lists much: torch.ones needs fill_.Scalar,
// torch.zeros needs zero_, .to() only builtins, and printing a tensor runs
// comparisons, abs, ceil, min/max, masked_select and cat on the device
// (torch/_tensor_str.py). The generated RegisterFallback.cpp runs the
// operators of the list below through the emulate fallback unless the spec
// registers them; the list is what printing float, integer, half, large
// and empty tensors, torch.zeros/ones and .to() reach in torch 2.13.
// Printing complex tensors needs view_as_real: a spec lists it (emulate)
// where it is needed.
const std::vector<std::string>& errorPolicyKeeps() {
  static const std::vector<std::string> kKeeps = {
      "abs.out",       "bitwise_and.Tensor_out",
      "cat.out",       "ceil.out",
      "div.out",       "eq.Scalar_out",
      "eq.Tensor_out", "fill_.Scalar",
      "gt.Scalar_out", "lt.Scalar_out",
      "masked_select", "max",
      "min",           "mul.out",
      "ne.Scalar_out", "ne.Tensor_out",
      "zero_",
  };
  return kKeeps;
}
// --8<-- [end:error-policy-keeps]

void appendFallback(const model::Backend& backend,
                    std::vector<OutputFile>& files) {
  std::vector<std::string> names;
  for (const auto& op : backend.operators()) {
    if (op.kind != spec::OpKind::kFallback) continue;
    for (const auto& m : op.members)
      names.push_back(m.fullName());
  }
  std::vector<std::string> kept;
  if (backend.fallback() == spec::FallbackPolicy::kError) {
    for (const auto& name : errorPolicyKeeps()) {
      if (backend.findRegistration(name) == nullptr) kept.push_back(name);
    }
  }
  const bool has_operators = !names.empty();
  const bool has_kept = !kept.empty();
  // Always written: it holds the global fallback policy too.
  files.push_back(
      ops::backendFile("csrc/ops/RegisterFallback.cpp",
                       {{"operators", ops::sortedUnique(std::move(names))},
                        {"has_operators", has_operators},
                        {"kept", ops::sortedUnique(std::move(kept))},
                        {"has_kept", has_kept},
                        {"has_aten", has_operators || has_kept}}));
}

// A banned operator's message as the lines of adjacent C++ string literals,
// each ending where the message has a line break.
json messageLines(std::string_view message) {
  json lines = json::array();
  while (!message.empty()) {
    std::size_t end = message.find('\n');
    end = end == std::string_view::npos ? message.size() : end + 1;
    lines.push_back({{"text", ops::cppEscape(message.substr(0, end))},
                     {"last", end == message.size()}});
    message.remove_prefix(end);
  }
  return lines;
}

void appendAutocast(const model::Backend& backend,
                    std::vector<OutputFile>& files) {
  if (!backend.features().autocast) return;
  json rules = json::array();
  std::vector<std::string> headers;
  json appended = json::array();
  json banned = json::array();
  for (const auto& rule : backend.autocastRules()) {
    const schema::FunctionSchema& s = rule.function->schema;
    const bool append = rule.dtype_overload != nullptr;
    const bool ban = rule.policy == spec::CastPolicy::kBanned;
    // The wrapper accgen writes when no c10 cast policy serves.
    const std::string wrapper =
        append || ban ? "autocast_" + s.name + (s.overload.empty() ? "" : "_") +
                            s.overload
                      : "";
    if (ban) {
      // A banned operator's wrapper only raises: it calls nothing and takes
      // its arguments unnamed.
      json data = ops::returnsData(rule.signature);
      data.update({{"name", rule.full_name},
                   {"wrapper", wrapper},
                   {"param_types", rule.signature.paramTypes()},
                   {"message", messageLines(rule.message)}});
      banned.push_back(std::move(data));
    } else {
      headers.push_back(ops::opsHeader(s));
    }
    if (append) {
      // Note [fp32_append_dtype]
      // ~~~~~~~~~~~~~~~~~~~~~~~~
      // The policy is for an operator without a dtype argument that has an
      // overload with one (norm.Scalar, norm.ScalarOpt_dtype): the model
      // finds that overload (findDtypeOverload in generator/model/build.cpp)
      // and the wrapper, with the dispatcher's signature, calls it below the
      // autocast key with float32, or with the first argument's dtype when
      // that is not a floating-point tensor on the device. Torch's wrapper
      // for this policy takes the at:: function's C++ signatures; the
      // dispatcher's, which accgen derives for every operator, serve as
      // well through at::_ops.
      const schema::FunctionSchema& target = rule.dtype_overload->schema;
      headers.push_back(ops::opsHeader(target));
      const std::string args = ops::callArgs(rule.signature);
      appended.push_back({{"name", rule.full_name},
                          {"target_name", target.fullName()},
                          {"target", ops::opsStruct(target)},
                          {"decl", rule.signature.decl(wrapper)},
                          {"args", args}});
    }
    rules.push_back({{"name", s.name},
                     {"overload", s.overload},
                     {"has_overload", !s.overload.empty()},
                     {"full_name", rule.full_name},
                     {"own_wrapper", !wrapper.empty()},
                     {"wrapper", wrapper},
                     {"policy", std::string(spec::policyName(rule.policy))}});
  }
  const char* dtype = backend.autocastDtype() == spec::AutocastDtype::kBFloat16
                          ? "at::kBFloat16"
                          : "at::kHalf";
  files.push_back(ops::backendFile(
      "csrc/ops/Autocast.cpp",
      {{"rules", rules},
       {"appended", appended},
       {"banned", banned},
       {"headers", ops::sortedUnique(std::move(headers))},
       {"dtype", dtype},
       {"dtype_name", std::string(spec::dtypeName(backend.autocastDtype()))}},
      ops::kAutocastSpec));
}

using AppendFn = void (*)(const model::Backend&, std::vector<OutputFile>&);

// The files of each kind whose registrations this emitter writes
// (spec::kindTraits(kind).emitter == kEmitterName).
struct KindFiles {
  spec::OpKind kind;
  AppendFn append;
};
constexpr std::string_view kEmitterName = "operators";
constexpr KindFiles kKindFiles[] = {
    {spec::OpKind::kEmulate, &appendEmulate},
    {spec::OpKind::kKernel, &ops::appendKernelFiles},
    {spec::OpKind::kStub, &appendStubs},
    {spec::OpKind::kFallback, &appendFallback},
    {spec::OpKind::kCustom, &ops::appendCustomFiles},
};

}  // namespace

std::vector<OutputFile> emitOperators(const model::Backend& backend) {
  // A kind the traits give to this emitter without an entry in kKindFiles
  // would lose its operators without a word.
  requireHandledKinds(
      backend, "the operators emitter", [](const spec::KindTraits& traits) {
        return traits.emitter != kEmitterName ||
               std::any_of(
                   std::begin(kKindFiles), std::end(kKindFiles),
                   [&](const KindFiles& k) { return k.kind == traits.kind; });
      });
  std::vector<OutputFile> files;
  for (const KindFiles& k : kKindFiles)
    k.append(backend, files);
  appendAutocast(backend, files);
  return files;
}

}  // namespace accgen::emit
