// Schema types to C++ dispatcher types.
//
// The rules are the ones libtorch's generated ATen/ops/*_ops.h declare for
// every operator (`static RET call(...)`): value types by value, Tensor and
// Scalar by const reference, written tensors by mutable reference, lists as
// ArrayRefs, SymInt kept as c10::SymInt. Spellings are canonical here
// (`const at::Tensor&`, `::std::tuple<at::Tensor&, at::Tensor&>`); the C++
// compiler, not the text, decides whether two spellings are the same type,
// which tests/schema_compile proves for every operator.
#include <algorithm>

#include "generator/schema/schema.h"

namespace accgen::schema {
namespace {

[[noreturn]] void unmappable(const Type& type, std::string_view why) {
  throw SchemaParseError(0,
                         "cannot map type '" + type.str() +
                             "' to a C++ dispatcher type: " + std::string(why));
}

// C++ spelling of a base type passed by value, or "" for Tensor and Scalar
// (which are passed by reference) and for unknown names.
std::string valueBase(std::string_view base) {
  static const std::pair<std::string_view, std::string_view> kMap[] = {
      {"int", "int64_t"},
      {"SymInt", "c10::SymInt"},
      {"SymBool", "c10::SymBool"},
      {"float", "double"},
      {"bool", "bool"},
      {"str", "c10::string_view"},
      {"Generator", "at::Generator"},
      {"ScalarType", "at::ScalarType"},
      {"Layout", "at::Layout"},
      {"Device", "at::Device"},
      {"DeviceIndex", "at::DeviceIndex"},
      {"MemoryFormat", "at::MemoryFormat"},
      {"QScheme", "at::QScheme"},
      {"Storage", "at::Storage"},
      {"Stream", "at::Stream"},
      {"Dimname", "at::Dimname"},
      {"DimVector", "at::DimVector"},
  };
  for (const auto& [name, cpp] : kMap) {
    if (name == base) return std::string(cpp);
  }
  return "";
}

std::string optionalOf(const std::string& t) {
  return "::std::optional<" + t + ">";
}

// The type of one list element (`Scalar` in `Scalar[]`) as an ArrayRef
// element: value types by value, Scalar itself.
std::string listElement(const Type& type) {
  Type elem;
  elem.base = type.base;
  elem.optional = type.elem_optional;
  if (type.base == "Scalar" && !type.elem_optional) return "at::Scalar";
  if (type.base == "Tensor" && !type.elem_optional) return "at::Tensor";
  std::string v = valueBase(type.base);
  if (v.empty()) unmappable(type, "no C++ element type");
  return type.elem_optional ? optionalOf(v) : v;
}

// A list type, not optional as a whole.
std::string listType(const Type& type, const SignatureOptions& options) {
  const std::string& b = type.base;
  if (b == "Tensor") {
    if (type.elem_optional) {
      return "const c10::List<::std::optional<at::Tensor>>&";
    }
    return options.ilistref_for_tensor_lists ? "const at::ITensorListRef&"
                                             : "at::TensorList";
  }
  if (type.elem_optional) {
    return "at::ArrayRef<" + listElement(type) + ">";
  }
  if (b == "int") return "at::IntArrayRef";
  if (b == "SymInt") return "c10::SymIntArrayRef";
  if (b == "Dimname") return "at::DimnameList";
  if (b == "bool") {
    // Fixed-size bool lists are std::arrays; unsized ones have no C++ form.
    if (!type.list_size) unmappable(type, "bool lists need a fixed size");
    return "::std::array<bool, " + std::to_string(*type.list_size) + ">";
  }
  return "at::ArrayRef<" + listElement(type) + ">";
}

}  // namespace

bool CppType::isMutableRef() const {
  return !text.starts_with("const ") && text.ends_with("&");
}

SignatureOptions SignatureOptions::of(const NativeFunction& fn) {
  SignatureOptions o;
  o.const_ref_for_mutable_tensors = fn.use_const_ref_for_mutable_tensors;
  o.ilistref_for_tensor_lists = fn.partOfStructuredGroup();
  return o;
}

CppType argumentCppType(const Type& type, SignatureOptions options) {
  const std::string& b = type.base;
  bool mutable_ref = type.isWrite() && !options.const_ref_for_mutable_tensors;
  if (type.is_list) {
    if (!type.optional) return {listType(type, options)};
    if (b == "int") return {"at::OptionalIntArrayRef"};
    if (b == "SymInt") return {"at::OptionalSymIntArrayRef"};
    Type whole = type;
    whole.optional = false;
    std::string inner = listType(whole, options);
    if (inner.starts_with("const ")) {
      unmappable(type, "optional lists of this element type are not supported");
    }
    return {optionalOf(inner)};
  }
  if (b == "Tensor") {
    std::string t = type.optional ? optionalOf("at::Tensor") : "at::Tensor";
    return {mutable_ref ? t + "&" : "const " + t + "&"};
  }
  if (b == "Scalar") {
    return {type.optional ? "const ::std::optional<at::Scalar>&"
                          : "const at::Scalar&"};
  }
  std::string v = valueBase(b);
  if (v.empty()) unmappable(type, "no C++ type for '" + b + "'");
  return {type.optional ? optionalOf(v) : v};
}

namespace {

std::string returnType(const Return& r, const SignatureOptions& options) {
  const Type& t = r.type;
  if (t.is_list) {
    if (t.isWrite()) {
      unmappable(t, "a written tensor list cannot be returned (return ())");
    }
    if (t.list_size || t.optional) {
      unmappable(t, "fixed-size or optional list returns are not supported");
    }
    Type elem;
    elem.base = t.base;
    elem.optional = t.elem_optional;
    return "::std::vector<" + returnType(Return{"", elem}, options) + ">";
  }
  if (t.base == "Tensor") {
    if (t.isWrite()) {
      if (t.optional)
        unmappable(t, "optional written returns are not supported");
      return options.const_ref_for_mutable_tensors ? "const at::Tensor&"
                                                   : "at::Tensor&";
    }
    return t.optional ? optionalOf("at::Tensor") : "at::Tensor";
  }
  if (t.base == "Scalar" && !t.optional) return "at::Scalar";
  std::string v = valueBase(t.base);
  if (v.empty()) unmappable(t, "no C++ return type");
  return t.optional ? optionalOf(v) : v;
}

}  // namespace

CppType returnsCppType(const std::vector<Return>& returns,
                       SignatureOptions options) {
  if (returns.empty()) return {"void"};
  if (returns.size() == 1) return {returnType(returns[0], options)};
  std::string s = "::std::tuple<";
  for (std::size_t i = 0; i < returns.size(); ++i) {
    if (i) s += ", ";
    s += returnType(returns[i], options);
  }
  return {s + ">"};
}

std::string Binding::decl() const {
  return type.text + " " + name;
}

std::string CppSignature::decl(std::string_view fn_name) const {
  // Sized first and appended in place: thousands of declarations a run.
  std::size_t size = returns.text.size() + fn_name.size() + 2;
  for (const auto& a : arguments)
    size += a.type.text.size() + a.name.size() + 3;
  std::string s;
  s.reserve(size);
  s.append(returns.text).append(" ").append(fn_name).append("(");
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (i) s += ", ";
    s.append(arguments[i].type.text).append(" ").append(arguments[i].name);
  }
  s += ')';
  return s;
}

std::string CppSignature::callArgs() const {
  std::string s;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (i) s += ", ";
    s += arguments[i].name;
  }
  return s;
}

std::string CppSignature::paramTypes() const {
  std::string s;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (i) s += ", ";
    s += arguments[i].type.text;
  }
  return s;
}

std::string CppSignature::functionType() const {
  return returns.text + "(" + paramTypes() + ")";
}

CppSignature dispatcherSignature(const FunctionSchema& schema,
                                 SignatureOptions options) {
  CppSignature sig;
  sig.returns = returnsCppType(schema.returns, options);
  sig.arguments.reserve(schema.arguments.size());
  for (const auto& a : schema.arguments) {
    sig.arguments.push_back(
        Binding{a.name, argumentCppType(a.type, options), &a});
  }
  return sig;
}

CppSignature dispatcherSignature(const NativeFunction& fn) {
  return dispatcherSignature(fn.schema, SignatureOptions::of(fn));
}

}  // namespace accgen::schema
