// User kernels: the `kernel` operators' wrappers for whole groups and the
// custom operators (schema, device and Meta kernels, autograd), with their
// user-owned starter files. See operators.cpp for the file list.
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "generator/emit/operators_support.h"
#include "generator/support/diagnostics.h"
#include "generator/support/parallel.h"

namespace accgen::emit::ops {
namespace {

using nlohmann::json;

// The first tensor argument, for the device guard and the device of new
// results; "" when there is none (factory functions).
std::vector<std::string> tensorArguments(const schema::CppSignature& sig) {
  std::vector<std::string> names;
  for (const auto& b : sig.arguments) {
    const std::string& t = b.type.text;
    if (t == "const at::Tensor&" || t == "at::Tensor&" ||
        t == "const ::std::optional<at::Tensor>&" || t == "at::TensorList" ||
        t == "const at::ITensorListRef&") {
      names.push_back(b.name);
    }
  }
  return names;
}

std::string firstTensor(const schema::CppSignature& sig) {
  std::vector<std::string> names = tensorArguments(sig);
  return names.empty() ? "" : names.front();
}

// The out arguments' names of a signature, in order.
std::vector<std::string> outNames(const schema::CppSignature& sig) {
  std::vector<std::string> names;
  for (const auto& b : sig.arguments) {
    if (b.argument != nullptr && b.argument->is_out) names.push_back(b.name);
  }
  return names;
}

// "a, b" with `from` replaced by `to`.
std::string callArgsRenaming(const schema::CppSignature& sig,
                             const std::vector<std::string>& from,
                             const std::string& to) {
  std::string out;
  for (const auto& b : sig.arguments) {
    if (!out.empty()) out += ", ";
    bool renamed = std::find(from.begin(), from.end(), b.name) != from.end();
    out += renamed ? to : b.name;
  }
  return out;
}

// The results of a functional call as template data: their variables and
// how each is taken from the value holding them all.
// A holder of shapes (ShapeCache::Results) is indexed; one of tensors is a
// tensor or a tuple of them.
json resultsData(const std::vector<std::string>& names,
                 const std::string& holder, bool shapes = false) {
  json results = json::array();
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string get = shapes ? holder + "[" + std::to_string(i) + "]"
                      : names.size() == 1 ? holder
                                          : "std::get<" + std::to_string(i) +
                                                ">(" + holder + ")";
    results.push_back({{"var", names[i]}, {"get", get}});
  }
  return results;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The result shapes of a functional member: its Meta computation (its C++
// meta function in structured groups, else its Meta kernel through the
// dispatcher), kept by the wrapper's shape cache for the arguments' key.
std::string shapeCall(const model::Registration& r,
                      std::vector<std::string>& headers) {
  std::string meta;
  if (hasCppMeta(*r.function)) {
    headers.push_back(metaHeader(r.schema()));
    meta = metaFunction(r.schema(), r.signature) + "(" +
           callArgs(r.signature, "toMeta") + ")";
  } else {
    headers.push_back(opsHeader(r.schema()));
    meta = opsStruct(r.schema()) +
           "::redispatch(c10::DispatchKeySet(c10::DispatchKey::Meta), " +
           callArgs(r.signature, "toMeta") + ")";
  }
  const std::string args = callArgs(r.signature);
  return "resultShapes(shape_cache, [&] { return " + meta + "; }" +
         (args.empty() ? "" : ", " + args) + ")";
}

// --8<-- [start:one-kernel-for-a-group]
// Note [One kernel for a group]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A vendor writes one body per `kernel` operator, for the form the spec
// lists (the primary); the wrappers of its group siblings derive from it
// the way ATen's own composite kernels do:
//   functional from out=      results allocated with the Meta shapes (the
//                             C++ meta function where there is one, kept
//                             per argument key: resultShapes in
//                             accgen/runtime/KernelSupport.h), then the
//                             out= kernel writes them;
//   in-place from out=        the out= kernel with `self` as out;
//   out= from functional      computed, then resize_output(out, ...) and
//                             out.copy_(result);
//   in-place from functional  computed, then self.copy_(result);
//   functional from in-place  a result of the Meta shape (broadcast,
//                             promoted), copy_(self), then the in-place
//                             kernel on it;
//   out= from in-place        resize_output(out, self.sizes()),
//                             out.copy_(self), then the in-place kernel on
//                             out.
// The out= form from an in-place kernel assumes the result has self's shape
// (true of in-place operators); an entry whose kernel cannot serve its
// siblings takes `group: false`, and its forms are listed apart.
// --8<-- [end:one-kernel-for-a-group]
json kernelWrapper(const model::Operator& op, const model::Registration& m,
                   std::vector<std::string>& headers) {
  using model::Derivation;
  const model::Registration& p = op.primary();
  // The derivation's flag and what it changes of the defaults below; the
  // model chose the derivation and refused members that have none.
  const char* derivation = nullptr;
  std::string kernel_args = callArgs(p.signature);
  std::string shape_call;
  std::string result_vars;
  json results = json::array();
  bool single_result = true;
  switch (&m == &p ? Derivation::kDirect : m.derivation) {
    case Derivation::kDirect:
      // The primary calls the kernel as it is.
      if (&m != &p) {
        throw AccgenError(ExitCode::kInternal,
                          "no derivation of '" + m.fullName() +
                              "' from the kernel of '" + p.fullName() + "'");
      }
      break;
    case Derivation::kFunctionalFromOut: {
      std::vector<std::string> outs = outNames(p.signature);
      derivation = "functional_from_out";
      shape_call = shapeCall(m, headers);
      results = resultsData(outs, "shapes", /*shapes=*/true);
      single_result = outs.size() == 1;
      result_vars = joined(outs);
      break;
    }
    case Derivation::kInplaceFromOut:
      derivation = "inplace_from_out";
      kernel_args =
          callArgsRenaming(p.signature, outNames(p.signature), "self");
      break;
    case Derivation::kOutFromFunctional: {
      std::vector<std::string> outs = outNames(m.signature);
      derivation = "out_from_functional";
      results = resultsData(outs, "result");
      single_result = outs.size() == 1;
      result_vars = joined(outs);
      headers.push_back("ATen/native/Resize.h");
      break;
    }
    case Derivation::kInplaceFromFunctional:
      derivation = "inplace_from_functional";
      break;
    case Derivation::kFunctionalFromInplace:
      derivation = "functional_from_inplace";
      shape_call = shapeCall(m, headers);
      kernel_args = callArgsRenaming(p.signature, {"self"}, "result");
      break;
    case Derivation::kOutFromInplace: {
      std::vector<std::string> outs = outNames(m.signature);
      derivation = "out_from_inplace";
      results = resultsData(outs, "");
      kernel_args = callArgsRenaming(p.signature, {"self"}, outs.at(0));
      result_vars = outs.at(0);
      headers.push_back("ATen/native/Resize.h");
      break;
    }
  }
  const std::vector<std::string> tensors = tensorArguments(m.signature);
  json w = returnsData(m.signature);
  auto& fields = w.get_ref<json::object_t&>();
  fields.emplace("name", m.fullName());
  fields.emplace("wrapper", m.wrapper_name);
  fields.emplace("decl", m.signature.decl(m.wrapper_name));
  const std::string guard = tensors.empty() ? "" : tensors.front();
  fields.emplace("guard", guard);
  fields.emplace("has_guard", !tensors.empty());
  fields.emplace("tensor_args", joined(tensors));
  fields.emplace("kernel", "kernels::" + op.kernel_name);
  fields.emplace("primary", &m == &p);
  for (const char* flag : {"functional_from_out", "inplace_from_out",
                           "out_from_functional", "inplace_from_functional",
                           "functional_from_inplace", "out_from_inplace"}) {
    fields.emplace(
        flag, derivation != nullptr && std::string_view(derivation) == flag);
  }
  fields.emplace("kernel_args", std::move(kernel_args));
  fields.emplace("shape_call", std::move(shape_call));
  fields.emplace("results", std::move(results));
  fields.emplace("result_vars", std::move(result_vars));
  fields.emplace("single_result", single_result);
  fields.emplace("device_of", guard);
  return w;
}

// The forms one kernel serves, for the comments of its declaration.
std::string servedForms(const model::Operator& op) {
  std::vector<std::string> others;
  for (const auto& m : op.members) {
    if (!m.primary) others.push_back(m.fullName());
  }
  return joined(others);
}

// "scaled_add.Tensor" -> "ScaledAddTensor".
std::string pascal(const std::string& name) {
  std::string out;
  bool up = true;
  for (char c : name) {
    if (c == '_' || c == '.') {
      up = true;
      continue;
    }
    out +=
        up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

// How an argument saved in AutogradContext::saved_data comes back as a value
// the backward's parameter accepts.
std::string fromIValue(const schema::Binding& b) {
  const std::string& t = b.type.text;
  if (t == "double") return ".toDouble()";
  if (t == "int64_t") return ".toInt()";
  if (t == "bool") return ".toBool()";
  if (t == "const at::Scalar&") return ".toScalar()";
  if (t == "at::ScalarType") return ".toScalarType()";
  if (t == "c10::SymInt") return ".toSymInt()";
  if (t == "at::IntArrayRef") return ".toIntVector()";
  if (t == "c10::SymIntArrayRef") return ".toSymIntVector()";
  if (t == "at::TensorList") return ".toTensorVector()";
  if (t == "c10::string_view" || t == "std::string_view") {
    return ".toStringView()";
  }
  if (t == "const ::std::optional<at::Tensor>&") {
    return ".toOptional<at::Tensor>()";
  }
  std::string plain = t;
  if (plain.rfind("const ", 0) == 0) plain = plain.substr(6);
  if (!plain.empty() && plain.back() == '&') plain.pop_back();
  return ".to<" + plain + ">()";
}

json customData(const model::CustomOperator& c, const std::string& ns) {
  const schema::CppSignature& sig = c.signature;
  const auto& returns = c.schema->returns;
  json saved_tensors = json::array();
  json saved_values = json::array();
  json backward_args = json::array();
  json grads = json::array();
  std::size_t tensor_index = 0;
  for (const auto& b : sig.arguments) {
    bool plain_tensor = b.type.text == "const at::Tensor&";
    if (plain_tensor) {
      saved_tensors.push_back(b.name);
      backward_args.push_back("saved[" + std::to_string(tensor_index) + "]");
      grads.push_back(
          {{"tensor", true}, {"index", std::to_string(tensor_index)}});
      ++tensor_index;
    } else {
      saved_values.push_back(b.name);
      backward_args.push_back("ctx->saved_data[\"" + b.name + "\"]" +
                              fromIValue(b));
      grads.push_back({{"tensor", false}, {"index", ""}});
    }
  }
  std::string backward_call;
  for (const auto& a : backward_args) {
    backward_call += ", " + a.get<std::string>();
  }
  // Single Tensor results go through autograd::Function as they are;
  // tuples as a variable_list.
  const bool single = returns.size() == 1;
  std::vector<std::string> tuple_items;
  for (std::size_t i = 0; i < returns.size(); ++i) {
    tuple_items.push_back("outputs[" + std::to_string(i) + "]");
  }
  std::vector<std::string> saved_names;
  for (const auto& t : saved_tensors)
    saved_names.push_back(t);
  const std::string autograd_wrapper =
      "autograd_" + c.wrapper_name.substr(std::string("wrapper_").size());
  std::string first = firstTensor(sig);
  json data = returnsData(sig);
  data.update(
      {{"full_name", c.full_name},
       {"qualified_name", c.qualified_name},
       {"schema", ops::cppEscape(c.schema->text)},
       {"name", c.schema->name},
       {"overload", c.schema->overload},
       {"decl", sig.decl(c.wrapper_name)},
       {"wrapper", c.wrapper_name},
       {"kernel", c.kernel_name},
       {"kernel_decl", sig.decl(c.kernel_name)},
       {"meta", c.meta},
       {"meta_name", c.meta_name},
       {"meta_decl", c.meta ? sig.decl(c.meta_name) : ""},
       {"autograd", c.autograd},
       {"backward_name", c.backward_name},
       {"backward_decl",
        c.autograd ? "std::vector<at::Tensor> " + c.backward_name +
                         "(const std::vector<at::Tensor>& grad_outputs" +
                         (sig.arguments.empty() ? "" : ", ") +
                         [&] {
                           std::string params;
                           for (const auto& b : sig.arguments) {
                             if (!params.empty()) params += ", ";
                             params += b.decl();
                           }
                           return params;
                         }() +
                         ")"
                   : ""},
       {"params",
        [&] {
          std::string params;
          for (const auto& b : sig.arguments)
            params += ", " + b.decl();
          return params;
        }()},
       {"args", callArgs(sig)},
       {"function_type", sig.functionType()},
       {"class_name", pascal(c.full_name) + "Function"},
       {"autograd_wrapper", autograd_wrapper},
       {"autograd_decl", sig.decl(autograd_wrapper)},
       {"saved_list", joined(saved_names)},
       {"saved_tensors", saved_tensors},
       {"saved_values", saved_values},
       {"backward_call", backward_call},
       {"grads", grads},
       {"tensor_count", std::to_string(tensor_index)},
       {"single_result", single},
       {"tuple_list", joined(tuple_items)},
       {"forward_returns",
        single ? "at::Tensor" : "torch::autograd::variable_list"},
       {"guard", first},
       {"has_guard", !first.empty()},
       {"kernel_file", c.kernel_file},
       {"ns", ns}});
  // The Meta starter: an empty_like of the first Tensor argument works for
  // the common shape-preserving case; anything else asks for a body.
  bool like_first = single && returns[0].type.isTensor() && !first.empty() &&
                    sig.arguments.front().type.text == "const at::Tensor&";
  data["meta_like"] = like_first ? sig.arguments.front().name : "";
  data["meta_like_first"] = like_first;
  return data;
}

}  // namespace

void appendKernelFiles(const model::Backend& backend,
                       std::vector<OutputFile>& files) {
  std::vector<const model::Operator*> ops;
  for (const auto& op : backend.operators()) {
    if (op.kind == spec::OpKind::kKernel) ops.push_back(&op);
  }
  // The data of thousands of kernels: each half of the operators is done on
  // a thread of its own, then the halves are joined in order.
  struct Part {
    std::vector<json> kernels;
    std::vector<OutputFile> starters;
    std::vector<std::pair<std::string, json>> wrappers;
    std::vector<std::string> headers;
  };
  Part parts[2];
  inTwoParts([&](int which) {
    Part& part = parts[which];
    auto [begin, end] = half(ops.size(), which);
    for (std::size_t i = begin; i < end; ++i) {
      const model::Operator& op = *ops[i];
      const model::Registration& p = op.primary();
      json k = returnsData(p.signature);
      auto& fields = k.get_ref<json::object_t&>();
      fields.emplace("name", op.full_name);
      fields.emplace("schema", p.schema().text);
      fields.emplace("decl", p.signature.decl(op.kernel_name));
      fields.emplace("kernel", op.kernel_name);
      fields.emplace("file", op.kernel_file);
      fields.emplace("forms", servedForms(op));
      fields.emplace("has_forms", op.members.size() > 1);
      fields.emplace("ops_struct", opsStruct(p.schema()));
      fields.emplace("ops_header", opsHeader(p.schema()));
      fields.emplace("args", callArgs(p.signature));
      // A hook operator's starter calls the runtime's emulation of it.
      const char* hook = model::hookFunction(p.fullName());
      fields.emplace("is_hook", hook != nullptr);
      fields.emplace("hook", hook != nullptr ? hook : "");
      for (const auto& m : op.members) {
        part.wrappers.emplace_back(m.wrapper_name,
                                   kernelWrapper(op, m, part.headers));
      }
      // KernelDecls.h names, declares and places each kernel; the rest is
      // the starter's.
      json decl = json::object();
      for (const char* key : {"name", "has_forms", "forms", "file", "decl"}) {
        decl.get_ref<json::object_t&>().emplace(key, fields.at(key));
      }
      part.kernels.push_back(std::move(decl));
      OutputFile user = backendFile(op.kernel_file, std::move(k));
      user.template_name = "kernels/kernel.cpp.mustache";
      user.user_owned = true;
      part.starters.push_back(std::move(user));
    }
  });
  json kernels = json::array();
  std::vector<std::pair<std::string, json>> wrappers;
  std::vector<std::string> headers;
  for (Part& part : parts) {
    for (auto& k : part.kernels)
      kernels.push_back(std::move(k));
    for (auto& f : part.starters)
      files.push_back(std::move(f));
    for (auto& w : part.wrappers)
      wrappers.push_back(std::move(w));
    headers.insert(headers.end(), part.headers.begin(), part.headers.end());
  }
  json custom = json::array();
  for (const auto& c : backend.customOperators()) {
    custom.push_back(customData(c, backend.cppNamespace()));
  }
  if (kernels.empty() && custom.empty()) return;
  json decls = json::object();
  decls["kernels"] = std::move(kernels);
  decls["custom"] = std::move(custom);
  files.push_back(backendFile("csrc/ops/KernelDecls.h", std::move(decls)));
  if (wrappers.empty()) return;
  // Sorted by wrapper name.
  std::sort(wrappers.begin(), wrappers.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  json sorted = json::array();
  sorted.get_ref<json::array_t&>().reserve(wrappers.size());
  for (auto& w : wrappers)
    sorted.push_back(std::move(w.second));
  json data = json::object();
  data["wrappers"] = std::move(sorted);
  data["headers"] = sortedUnique(std::move(headers));
  files.push_back(backendFile("csrc/ops/RegisterKernels.cpp", std::move(data)));
}

void appendCustomFiles(const model::Backend& backend,
                       std::vector<OutputFile>& files) {
  json custom = json::array();
  bool any_autograd = false;
  bool any_meta = false;
  for (const auto& c : backend.customOperators()) {
    json data = customData(c, backend.cppNamespace());
    any_autograd = any_autograd || c.autograd;
    any_meta = any_meta || c.meta;
    OutputFile user = backendFile(c.kernel_file, data);
    user.template_name = "kernels/custom.cpp.mustache";
    user.user_owned = true;
    files.push_back(std::move(user));
    custom.push_back(std::move(data));
  }
  if (custom.empty()) return;
  files.push_back(
      backendFile("csrc/ops/CustomOps.cpp", {{"custom", custom},
                                             {"any_autograd", any_autograd},
                                             {"any_meta", any_meta}}));
}

}  // namespace accgen::emit::ops
