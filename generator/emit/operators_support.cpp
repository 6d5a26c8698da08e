// Naming rules of ATen's generated C++ API (at::_ops structs, ATen/ops
// headers, at::meta functions) and signature helpers shared by the operator
// emitters; see operators_support.h.
#include "generator/emit/operators_support.h"

#include <algorithm>
#include <utility>

namespace accgen::emit::ops {

OutputFile backendFile(std::string path, nlohmann::json data,
                       std::string source) {
  OutputFile file;
  file.template_name = "backend/" + path + ".mustache";
  file.path = std::move(path);
  file.data = std::move(data);
  file.source = std::move(source);
  return file;
}

std::string opsStruct(const schema::FunctionSchema& schema) {
  std::string name = "at::_ops::" + schema.name;
  if (!schema.overload.empty()) name += "_" + schema.overload;
  return name;
}

std::string opsHeader(const schema::FunctionSchema& schema) {
  // Named after the group's root: normal_functional is in normal_ops.h.
  std::string root = schema.baseName();
  constexpr std::string_view kFunctional = "_functional";
  if (root.ends_with(kFunctional))
    root.resize(root.size() - kFunctional.size());
  return "ATen/ops/" + root + "_ops.h";
}

std::string metaHeader(const schema::FunctionSchema& schema) {
  return "ATen/ops/" + schema.baseName() + "_meta_dispatch.h";
}

bool hasCppMeta(const schema::NativeFunction& fn) {
  return fn.partOfStructuredGroup();
}

std::string metaFunction(const schema::FunctionSchema& schema,
                         const schema::CppSignature& signature) {
  // ATen declares a _symint overload of the meta function exactly when the
  // signature has SymInts; the plain one takes int64_t there.
  bool symint =
      std::any_of(signature.arguments.begin(), signature.arguments.end(),
                  [](const schema::Binding& b) {
                    return b.type.text.find("SymInt") != std::string::npos;
                  });
  return "at::meta::" + schema.name + (symint ? "_symint" : "");
}

bool isTensorLike(const schema::Binding& binding) {
  return binding.argument != nullptr && binding.argument->type.isTensorLike();
}

std::string callArgs(const schema::CppSignature& signature,
                     const std::string& wrap) {
  std::string out;
  for (const auto& b : signature.arguments) {
    if (!out.empty()) out += ", ";
    if (!wrap.empty() && isTensorLike(b)) {
      out += wrap + "(" + b.name + ")";
    } else {
      out += b.name;
    }
  }
  return out;
}

std::string cppEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"':
      case '\\':
        out += '\\';
        out += c;
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          // Three octal digits: a following digit cannot extend the escape.
          const auto u = static_cast<unsigned char>(c);
          out += '\\';
          out += static_cast<char>('0' + (u >> 6));
          out += static_cast<char>('0' + ((u >> 3) & 7));
          out += static_cast<char>('0' + (u & 7));
        } else {
          out += c;
        }
    }
  }
  return out;
}

nlohmann::json sortedUnique(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

nlohmann::json returnsData(const schema::CppSignature& signature) {
  // Built field by field: an initializer list copies every value twice,
  // which shows in a backend of thousands of kernels.
  nlohmann::json data = nlohmann::json::object();
  auto& fields = data.get_ref<nlohmann::json::object_t&>();
  fields.emplace("returns", signature.returns.text);
  fields.emplace("returns_void", signature.returns.text == "void");
  return data;
}

}  // namespace accgen::emit::ops
