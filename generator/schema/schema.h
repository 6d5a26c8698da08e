// The schema model: PyTorch operator schemas, native_functions.yaml entries
// and their C++ dispatcher signatures.
//
// This is the layer that knows PyTorch. It parses the `func:` schema grammar
// (`add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) ->
// Tensor(a!)`) into plain structs, loads every entry of the installed torch's
// native_functions.yaml into an immutable SchemaRegistry, and maps a schema to
// the exact C++ signature libtorch's dispatcher expects for a backend kernel
// (torchgen's dispatcher API with SymInt kept). It also locates the installed
// torch without importing it, and scans ATen's headers for DispatchStubs.
// docs/schemas.md describes the grammar, the type mapping and the rules.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "generator/support/diagnostics.h"

namespace accgen::schema {

// ---------------------------------------------------------------------------
// The schema grammar
// ---------------------------------------------------------------------------

/// Thrown by parseFunctionSchema on malformed text.
class SchemaParseError : public std::runtime_error {
 public:
  /// `column` is 0-based inside the parsed string; `detail` says what was
  /// expected ("expected ')' after the arguments").
  SchemaParseError(std::size_t column, std::string detail);
  /// 0-based column inside the parsed schema string.
  std::size_t column() const { return column_; }
  /// The message without the column prefix.
  const std::string& detail() const { return detail_; }

 private:
  std::size_t column_;
  std::string detail_;
};

/// The alias annotation of a Tensor type: `(a)`, `(a!)`, `(a|b)`,
/// `(a -> *)`, `(a! -> a|b)`.
struct Annotation {
  /// Alias sets before `->` ("a"; "a", "b" for `a|b`).
  std::vector<std::string> alias_set;
  /// `!`: the operator writes through this alias.
  bool is_write = false;
  /// Alias sets after `->` ("*" for `a -> *`); empty when there is no arrow.
  std::vector<std::string> alias_set_after;

  /// Schema spelling without parentheses: "a!", "a -> *".
  std::string str() const;
  bool operator==(const Annotation&) const = default;
};

/// A schema type: a base name with optional `?`, list `[]`/`[N]` and element
/// `?` (`Tensor?[]`). The alias annotation, when present, belongs to the
/// element (`Tensor(a!)[]` is a list of written tensors).
struct Type {
  /// Base name as spelled in the schema: Tensor, Scalar, ScalarType, Layout,
  /// Device, DeviceIndex, MemoryFormat, Generator, Dimname, Storage, Stream,
  /// QScheme, int, SymInt, SymBool, float, bool, str, Any, ...
  std::string base;
  /// `Tensor?[]`: the list elements are optional.
  bool elem_optional = false;
  /// `T[]` or `T[N]`.
  bool is_list = false;
  /// N of `T[N]`; nullopt for `T[]` or non-lists.
  std::optional<int> list_size;
  /// `T?` (for lists, the whole list is optional: `int[]?`).
  bool optional = false;
  /// `Tensor(a!)` / `Tensor(a)[]`.
  std::optional<Annotation> annotation;

  /// True for `Tensor`, `Tensor?`, `Tensor(a!)`, ... but not lists.
  bool isTensor() const { return base == "Tensor" && !is_list; }
  /// True for any type whose base is Tensor (lists included).
  bool isTensorLike() const { return base == "Tensor"; }
  /// True when the annotation has `!`.
  bool isWrite() const { return annotation && annotation->is_write; }
  /// Schema spelling: "Tensor(a!)[]", "int[2]?", "Tensor?".
  std::string str() const;
  /// The same type without its alias annotation.
  Type withoutAnnotation() const;
  bool operator==(const Type&) const = default;
};

/// One argument of a schema.
struct Argument {
  std::string name;
  Type type;
  /// Default value text as written ("1", "None", "[0, 1]", "'linear'");
  /// nullopt when there is none.
  std::optional<std::string> default_value;
  /// Declared after `*`.
  bool kwarg_only = false;
  /// A keyword-only argument with a write annotation: an `out=` argument.
  bool is_out = false;

  /// Schema spelling: "Tensor(a!) out", "Scalar alpha=1".
  std::string str() const;
  bool operator==(const Argument&) const = default;
};

/// One return of a schema; `name` is empty when unnamed.
struct Return {
  std::string name;
  Type type;

  std::string str() const;
  bool operator==(const Return&) const = default;
};

/// How a schema relates to its group (see FunctionSchema::kind()).
enum class SchemaKind {
  kFunctional,  ///< returns fresh values, writes nothing
  kInplace,     ///< name ends in `_`, writes `self`
  kOut,         ///< has out arguments
  kMutable,     ///< writes a non-out argument, name without `_`
  kScratch,     ///< has out arguments named `_scratch_*`
};

/// "functional", "inplace", "out", "mutable", "scratch".
std::string_view kindName(SchemaKind kind);

/// A parsed `func:` string.
struct FunctionSchema {
  /// Operator base name without the overload: "add", "__and__", "add_".
  std::string name;
  /// Overload name, "" when there is none.
  std::string overload;
  std::vector<Argument> arguments;
  std::vector<Return> returns;
  /// The text that was parsed, unchanged.
  std::string text;

  /// "name.overload", or "name" when there is no overload.
  std::string fullName() const;
  /// The name ends in `_` (`add_`, not a dunder), or it is an augmented
  /// assignment dunder (`__iand__`, `__ilshift__`), as torchgen reads names.
  bool isInplace() const;
  /// The name without the in-place marker: "add" for "add_", "__and__" for
  /// "__iand__"; the name itself otherwise.
  std::string baseName() const;
  /// Has at least one out argument.
  bool isOut() const;
  /// Functional, in-place, out, mutable or scratch; mirrors torchgen's
  /// FunctionSchema.kind().
  SchemaKind kind() const;
  /// The out arguments in schema order.
  std::vector<const Argument*> outArguments() const;
  /// The grouping key shared by the functional, in-place, out and mutable
  /// variants of one operator: baseName() with a `_functional` suffix
  /// dropped, no overload name, out arguments dropped, alias annotations and
  /// return names stripped, defaults kept; the same rule as torchgen's
  /// FunctionSchema.signature(). "add(Tensor self, Tensor other, *, Scalar
  /// alpha=1) -> Tensor" for add.Tensor, add_.Tensor and add.out.
  std::string signature() const;
  /// Re-spelled schema text (normalised spacing), for diagnostics and tests.
  std::string str() const;
};

/// Parses one schema string. Throws SchemaParseError on malformed input.
FunctionSchema parseFunctionSchema(std::string_view text);

/// Parses one type ("Tensor(a!)[]", "int[2]?"). Throws SchemaParseError.
Type parseType(std::string_view text);

// ---------------------------------------------------------------------------
// native_functions.yaml
// ---------------------------------------------------------------------------

/// One `- func:` entry of native_functions.yaml.
struct NativeFunction {
  FunctionSchema schema;
  /// The file and the 1-based line (and column) of the `- func:` item.
  SourceLoc loc;
  /// `dispatch:` keys (comma-joined keys split) to kernel names, in file
  /// order of keys sorted by std::map. Empty when there is no dispatch map.
  std::map<std::string, std::string> dispatch;
  /// The entry has a `dispatch:` key at all.
  bool has_dispatch = false;
  bool structured = false;
  /// `structured_delegate:` target, "" when none.
  std::string structured_delegate;
  /// `structured_inherits:`, "" when none.
  std::string structured_inherits;
  /// `ufunc_inner_loop:` present (torchgen then generates CPU and CUDA
  /// kernels for the entry).
  bool has_ufunc_inner_loop = false;
  /// `tags:` (a single string or a list).
  std::vector<std::string> tags;
  /// `variants:` split at commas ("function", "method").
  std::vector<std::string> variants;
  bool manual_kernel_registration = false;
  bool manual_cpp_binding = false;
  /// `python_module:`, "" when none.
  std::string python_module;
  /// `device_check:` ("NoCheck"), "" when none.
  std::string device_check;
  /// `autogen:` names (operators torchgen generates from this one).
  std::vector<std::string> autogen;
  /// `use_const_ref_for_mutable_tensors: True`: written tensors are passed
  /// and returned as `const at::Tensor&` in the C++ signature.
  bool use_const_ref_for_mutable_tensors = false;

  /// `structured: True` or a structured_delegate: torchgen then passes
  /// `Tensor[]` as `const at::ITensorListRef&` (cat, cat.out).
  bool partOfStructuredGroup() const {
    return structured || !structured_delegate.empty();
  }

  /// The entry's kernel for `key`, or nullptr.
  const std::string* kernelFor(std::string_view key) const;
  /// True when the operator is implemented once for all backends by
  /// decomposition: no `dispatch:` and no `structured_delegate:`, or a
  /// dispatch map whose only keys are CompositeImplicitAutograd and/or
  /// CompositeImplicitAutogradNestedTensor.
  bool hasCompositeImplicitAutograd() const;
  /// True when CPU tensors have a kernel: the dispatch map names CPU,
  /// CompositeExplicitAutograd or CompositeExplicitAutogradNonFunctional, the
  /// entry has a ufunc_inner_loop, or it is a structured_delegate to an entry
  /// that has one. Needs the registry to follow structured_delegate; use
  /// SchemaRegistry::hasCpuKernel.
  bool hasCpuKernelDirect() const;
  /// A backend kernel registered on PrivateUse1 for this operator is
  /// reachable and accepted: not CompositeImplicitAutograd (the dispatcher
  /// never reaches a backend kernel for those; they decompose above it) and
  /// not manual_kernel_registration (their kernels are registered by hand in
  /// PyTorch with special semantics).
  bool canHaveBackendKernel() const;
};

/// Every entry of one native_functions.yaml; immutable after load.
class SchemaRegistry {
 public:
  /// Parses `path`. Throws AccgenError(kInvalidInput,
  /// "path:line:col: error: ...") on unreadable files, malformed YAML
  /// structure, malformed schemas and duplicate names.
  static SchemaRegistry load(const std::string& path);
  /// Parses `text` as if read from `path` (tests, in-memory inputs).
  static SchemaRegistry loadFromString(std::string_view text,
                                       const std::string& path);

  /// The entry named "add.Tensor" / "relu", or nullptr.
  const NativeFunction* find(std::string_view full_name) const;
  /// Every full name, sorted.
  std::vector<std::string> allNames() const;
  /// Every entry, in file order.
  const std::vector<NativeFunction>& functions() const { return *functions_; }
  /// `fn`, an entry of this registry, with shared ownership of the entries
  /// (they live as long as the registry or any such pointer does); a copy
  /// of its own for an entry of no registry.
  std::shared_ptr<const NativeFunction> shared(const NativeFunction& fn) const;
  /// The nearest full name to a misspelt one, or "".
  std::string nearest(std::string_view name) const;

  /// The functional / in-place / out variants sharing `fn`'s signature()
  /// (nullptr where the group has none). `fn` itself is one of them.
  struct Group {
    const NativeFunction* functional = nullptr;
    const NativeFunction* inplace = nullptr;
    const NativeFunction* out = nullptr;
    const NativeFunction* mutable_fn = nullptr;
  };
  Group group(const NativeFunction& fn) const;

  /// hasCpuKernelDirect(), following structured_delegate.
  bool hasCpuKernel(const NativeFunction& fn) const;

  /// The file this registry was loaded from.
  const std::string& path() const { return path_; }
  /// The torch version the file belongs to ("2.13.0+cpu"); empty unless the
  /// caller set it (it comes from findTorch(), not from the file).
  const std::string& torchVersion() const { return torch_version_; }
  void setTorchVersion(std::string version) {
    torch_version_ = std::move(version);
  }

 private:
  std::string path_;
  std::string torch_version_;
  std::shared_ptr<std::vector<NativeFunction>> functions_ =
      std::make_shared<std::vector<NativeFunction>>();
  std::unordered_map<std::string, std::size_t> by_name_;
  /// Entries by signature name (baseName() without `_functional`).
  std::unordered_map<std::string, std::vector<std::size_t>> by_group_name_;
};

// ---------------------------------------------------------------------------
// Locating PyTorch
// ---------------------------------------------------------------------------

/// Where the installed torch lives.
struct TorchInstall {
  std::string site_packages;          ///< parent directory of torch/
  std::string torch_dir;              ///< .../site-packages/torch
  std::string version;                ///< "2.13.0+cpu"
  std::string native_functions_yaml;  ///< torchgen/packaged/.../*.yaml
  std::string include_dir;            ///< .../torch/include
};

/// Runs the Python interpreter ($ACCGEN_PYTHON, else python3) once, without
/// importing torch. Throws AccgenError(kInvalidInput) when Python, torch or
/// torchgen's native_functions.yaml cannot be found.
TorchInstall findTorch();

/// The version a torch/version.py declares ("2.13.0+cpu"); "" when the
/// file cannot be read or declares none.
std::string readTorchVersion(const std::string& version_py);

/// DispatchStub names ("abs_stub") to the header that declares them, as a
/// registration file includes it ("ATen/native/UnaryOps.h").
using DispatchStubs = std::map<std::string, std::string>;

/// Scans `aten_include_dir` (torch/include, or its ATen/) for
/// DECLARE_DISPATCH(<fn type>, <name>) in ATen/native/**/*.h. Headers are
/// read in path order; a stub declared twice keeps its first header.
DispatchStubs findDispatchStubs(const std::string& aten_include_dir);

// ---------------------------------------------------------------------------
// C++ dispatcher signatures
// ---------------------------------------------------------------------------

/// A C++ type in its one canonical spelling ("const at::Tensor&",
/// "::std::optional<int64_t>", "at::TensorList").
struct CppType {
  std::string text;

  /// True for `T&` (non-const reference): a written tensor.
  bool isMutableRef() const;
  bool operator==(const CppType&) const = default;
};

/// A named C++ parameter.
struct Binding {
  std::string name;
  CppType type;
  /// The schema argument it comes from; points into the FunctionSchema the
  /// signature was made from, so it is valid as long as that schema is.
  const Argument* argument = nullptr;

  /// "const at::Tensor& self".
  std::string decl() const;
  /// The same as decl(): dispatcher signatures have no defaults.
  std::string defn() const { return decl(); }
};

/// The C++ signature of a backend kernel for one schema.
struct CppSignature {
  CppType returns;
  std::vector<Binding> arguments;

  /// "at::Tensor fn(const at::Tensor& self, const at::Scalar& other)".
  std::string decl(std::string_view fn_name) const;
  /// Same text as decl(): kept separate for callers that emit definitions.
  std::string defn(std::string_view fn_name) const { return decl(fn_name); }
  /// "self, other, alpha".
  std::string callArgs() const;
  /// "const at::Tensor&, const at::Scalar&": the parameter types only.
  std::string paramTypes() const;
  /// "at::Tensor(const at::Tensor&, const at::Scalar&)": the function type.
  std::string functionType() const;
};

/// Per-entry switches of native_functions.yaml that change the C++ types
/// (torchgen applies them while generating each entry).
struct SignatureOptions {
  /// Written tensors become `const at::Tensor&` (arguments and returns).
  bool const_ref_for_mutable_tensors = false;
  /// `Tensor[]` becomes `const at::ITensorListRef&`.
  bool ilistref_for_tensor_lists = false;

  /// The options torchgen uses for `fn`.
  static SignatureOptions of(const NativeFunction& fn);
};

/// The C++ type of one argument type in the dispatcher API. Throws
/// SchemaParseError (column 0) for a type the dispatcher cannot take.
CppType argumentCppType(const Type& type, SignatureOptions options = {});
/// The C++ return type of a schema's returns. Throws SchemaParseError
/// (column 0) for a return type the dispatcher cannot give.
CppType returnsCppType(const std::vector<Return>& returns,
                       SignatureOptions options = {});
/// Exactly the signature libtorch's dispatcher expects for
/// `m.impl("name.overload", TORCH_FN(fn))` on a backend key: every argument
/// in schema order (out arguments last, where the schema puts them), no
/// defaults, no TensorOptions packing, SymInt kept. Throws SchemaParseError
/// (column 0) for a type it cannot map.
///
/// The options are not optional: an aten operator's come from its
/// native_functions.yaml entry (use the NativeFunction overload), and the
/// bare schema alone maps `cat`'s `Tensor[]` to `at::TensorList` where ATen
/// declares `const at::ITensorListRef&`. A schema of no entry (a custom
/// operator) passes `{}`.
CppSignature dispatcherSignature(const FunctionSchema& schema,
                                 SignatureOptions options);
/// The same for a native_functions.yaml entry, with its own options.
CppSignature dispatcherSignature(const NativeFunction& fn);

}  // namespace accgen::schema
