// Naming rules for devices, packages, namespaces and operator names.
//
// The lists below are facts about Python, C++20 and torch 2.x; they are
// short, so membership is a linear search.
#include "generator/spec/names.h"
#include "generator/support/identifiers.h"

#include <algorithm>

namespace accgen::spec {
namespace {

constexpr std::string_view kPythonKeywords[] = {
    "False",  "None",   "True",    "and",      "as",       "assert", "async",
    "await",  "break",  "class",   "continue", "def",      "del",    "elif",
    "else",   "except", "finally", "for",      "from",     "global", "if",
    "import", "in",     "is",      "lambda",   "nonlocal", "not",    "or",
    "pass",   "raise",  "return",  "try",      "while",    "with",   "yield"};

constexpr std::string_view kCppKeywords[] = {
    "alignas",       "alignof",     "and",
    "and_eq",        "asm",         "auto",
    "bitand",        "bitor",       "bool",
    "break",         "case",        "catch",
    "char",          "char16_t",    "char32_t",
    "char8_t",       "class",       "co_await",
    "co_return",     "co_yield",    "compl",
    "concept",       "const",       "const_cast",
    "consteval",     "constexpr",   "constinit",
    "continue",      "decltype",    "default",
    "delete",        "do",          "double",
    "dynamic_cast",  "else",        "enum",
    "explicit",      "export",      "extern",
    "false",         "float",       "for",
    "friend",        "goto",        "if",
    "inline",        "int",         "long",
    "mutable",       "namespace",   "new",
    "noexcept",      "not",         "not_eq",
    "nullptr",       "operator",    "or",
    "or_eq",         "private",     "protected",
    "public",        "register",    "reinterpret_cast",
    "requires",      "return",      "short",
    "signed",        "sizeof",      "static",
    "static_assert", "static_cast", "struct",
    "switch",        "template",    "this",
    "thread_local",  "throw",       "true",
    "try",           "typedef",     "typeid",
    "typename",      "union",       "unsigned",
    "using",         "virtual",     "void",
    "volatile",      "wchar_t",     "while",
    "xor",           "xor_eq",      "final",
    "override",      "import"};

// c10::DeviceTypeName(type, /*lower_case=*/true) for every c10::DeviceType.
constexpr std::string_view kTorchDeviceTypes[] = {
    "cpu",    "cuda",   "fpga",          "hip",   "hpu",    "ideep", "ipu",
    "lazy",   "maia",   "meta",          "metal", "mkldnn", "mps",   "mtia",
    "opencl", "opengl", "privateuseone", "ve",    "vulkan", "xla",   "xpu"};

// Public torch submodules and module-level objects whose names a device
// module would shadow. Operators (torch.add, ...) are checked by the model
// against the schema registry.
constexpr std::string_view kReservedTorchAttributes[] = {"accelerator",
                                                         "amp",
                                                         "ao",
                                                         "autocast",
                                                         "autograd",
                                                         "backends",
                                                         "bfloat16",
                                                         "bits",
                                                         "bool",
                                                         "cdouble",
                                                         "cfloat",
                                                         "classes",
                                                         "compile",
                                                         "compiler",
                                                         "complex",
                                                         "contrib",
                                                         "cpu",
                                                         "csrc",
                                                         "cuda",
                                                         "device",
                                                         "distributed",
                                                         "distributions",
                                                         "double",
                                                         "dtype",
                                                         "e",
                                                         "export",
                                                         "fft",
                                                         "finfo",
                                                         "float",
                                                         "func",
                                                         "functional",
                                                         "futures",
                                                         "fx",
                                                         "generator",
                                                         "half",
                                                         "hub",
                                                         "iinfo",
                                                         "inf",
                                                         "int",
                                                         "jit",
                                                         "layout",
                                                         "library",
                                                         "linalg",
                                                         "load",
                                                         "long",
                                                         "manual_seed",
                                                         "masked",
                                                         "memory_format",
                                                         "monitor",
                                                         "mps",
                                                         "mtia",
                                                         "multiprocessing",
                                                         "nan",
                                                         "nativert",
                                                         "nested",
                                                         "nn",
                                                         "no_grad",
                                                         "numa",
                                                         "onnx",
                                                         "ops",
                                                         "optim",
                                                         "overrides",
                                                         "package",
                                                         "pi",
                                                         "profiler",
                                                         "quantization",
                                                         "quasirandom",
                                                         "random",
                                                         "return_types",
                                                         "save",
                                                         "seed",
                                                         "serialization",
                                                         "short",
                                                         "signal",
                                                         "size",
                                                         "sparse",
                                                         "special",
                                                         "storage",
                                                         "strided",
                                                         "stream",
                                                         "tensor",
                                                         "testing",
                                                         "torch",
                                                         "torch_version",
                                                         "types",
                                                         "uint",
                                                         "utils",
                                                         "version",
                                                         "vmap",
                                                         "xpu",
                                                         "event",
                                                         "typename",
                                                         "cond",
                                                         "numel",
                                                         "initial_seed"};

bool contains(const auto& list, std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

bool isIdentPart(std::string_view part) {
  return !part.empty() && std::all_of(part.begin(), part.end(), isIdentChar);
}

}  // namespace

bool isIdentifier(std::string_view name) {
  return isIdentPart(name) && !(name[0] >= '0' && name[0] <= '9');
}

bool isPythonKeyword(std::string_view name) {
  return contains(kPythonKeywords, name);
}

bool isCppKeyword(std::string_view name) {
  return contains(kCppKeywords, name);
}

bool isTorchDeviceType(std::string_view name) {
  return contains(kTorchDeviceTypes, name);
}

bool isReservedTorchAttribute(std::string_view name) {
  return contains(kReservedTorchAttributes, name);
}

bool isOperatorName(std::string_view name) {
  std::size_t dot = name.find('.');
  if (dot == std::string_view::npos) return isIdentifier(name);
  // Overload names may start with a digit in principle; only the base name
  // must be a Python identifier.
  return isIdentifier(name.substr(0, dot)) && isIdentPart(name.substr(dot + 1));
}

std::string deviceNameProblem(std::string_view device) {
  if (device.empty()) return "it is empty";
  bool letters_only = std::all_of(device.begin(), device.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || c == '_';
  });
  if (!letters_only) {
    return "torch.device accepts only lower-case letters and underscores in "
           "a device type";
  }
  if (isPythonKeyword(device)) return "it is a Python keyword";
  if (isTorchDeviceType(device)) {
    std::string why = "'";
    why.append(device).append("' is a device type torch already has");
    return why;
  }
  if (isReservedTorchAttribute(device)) {
    std::string why = "torch.";
    why.append(device).append(
        " already exists and the device module is registered as "
        "torch.<device>");
    return why;
  }
  return "";
}

std::string cppNamespaceProblem(std::string_view ns) {
  if (!isIdentifier(ns)) return "it is not a C++ identifier";
  if (isCppKeyword(ns)) return "it is a C++ keyword";
  if (ns.find("__") != std::string_view::npos ||
      (ns.size() > 1 && ns[0] == '_' && ns[1] >= 'A' && ns[1] <= 'Z')) {
    return "identifiers with '__' or starting with '_' and a capital are "
           "reserved in C++";
  }
  for (std::string_view taken : {"at", "c10", "caffe2", "std", "torch"}) {
    if (ns == taken) {
      std::string why = "the generated code uses the namespace ";
      return why.append(taken).append("::");
    }
  }
  // Custom operators are registered in a library named after the namespace.
  for (std::string_view taken : {"aten", "prim", "prims", "quantized"}) {
    if (ns == taken) return "it is a PyTorch operator library";
  }
  return "";
}

}  // namespace accgen::spec
