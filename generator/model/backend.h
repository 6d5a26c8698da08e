// The backend model: the specs joined with PyTorch's schemas, validated.
//
// buildBackend resolves every operator of operators.yaml to its
// native_functions.yaml entry and C++ dispatcher signature, expands kernel,
// emulate and fallback groups to their functional / in-place / out siblings,
// names every generated wrapper and user kernel, parses custom operator
// schemas and resolves autocast.yaml, reporting every problem it finds. The
// resulting Backend is immutable and self-contained (it shares, not borrows,
// the schema entries it uses), so emitters need nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "generator/schema/schema.h"
#include "generator/spec/spec.h"
#include "generator/support/diagnostics.h"

namespace accgen::model {

/// The operators every backend registers as `builtin` (allocation, copies,
/// views, storage), sorted by (name, overload).
const std::vector<std::string>& builtinOperators();

/// How the wrapper of a `kernel` group member reaches the user's kernel,
/// which implements the group's primary form (Note [One kernel for a group]
/// in generator/emit/operators_kernels.cpp).
enum class Derivation {
  kDirect,                 ///< the primary itself, or not a kernel group
  kFunctionalFromOut,      ///< results allocated, then the out= kernel
  kInplaceFromOut,         ///< the out= kernel with self as out
  kOutFromFunctional,      ///< computed, then resized out and copied
  kInplaceFromFunctional,  ///< computed, then copied into self
  kFunctionalFromInplace,  ///< self copied into a result, then in place
  kOutFromInplace,         ///< out resized and filled, then in place
};

/// The derivation of a member of role `to` from a primary of role `from`,
/// each with its number of out arguments; nullopt when a wrapper cannot be
/// derived (mutable or scratch forms, several outs where one is needed).
std::optional<Derivation> derivationOf(schema::SchemaKind from,
                                       std::size_t from_outs,
                                       schema::SchemaKind to,
                                       std::size_t to_outs);

/// One aten function registered on PrivateUse1 by an Operator: the operator
/// itself or a sibling of its group.
struct Registration {
  /// The native_functions.yaml entry (ownership shared with the registry
  /// it comes from, SchemaRegistry::shared).
  std::shared_ptr<const schema::NativeFunction> function;
  /// The C++ signature of the kernel the dispatcher calls; its bindings
  /// point into *function.
  schema::CppSignature signature;
  /// The generated wrapper function: wrapper_<name>_<overload>, unique in the
  /// backend.
  std::string wrapper_name;
  /// functional, in-place or out (schema::SchemaKind).
  schema::SchemaKind role = schema::SchemaKind::kFunctional;
  /// The form the spec lists (the one a kernel's user-written body
  /// implements).
  bool primary = false;
  /// For a member of a group whose kind has user kernels: how its wrapper
  /// calls the primary's kernel; kDirect otherwise.
  Derivation derivation = Derivation::kDirect;

  /// "add_.Tensor".
  std::string fullName() const { return function->schema.fullName(); }
  const schema::FunctionSchema& schema() const { return function->schema; }
};

/// `fn` registered on PrivateUse1: its dispatcher signature with the
/// options of its native_functions.yaml entry (bindings point into *fn) and
/// its role. The one way the model maps an aten function to C++; the
/// all-operator signature proof (tests/schema_compile) goes through it too.
/// Throws schema::SchemaParseError for a type the schema layer cannot map.
Registration registrationOf(std::shared_ptr<const schema::NativeFunction> fn,
                            bool primary);

/// One entry of operators.yaml, resolved.
struct Operator {
  /// As listed: "add.Tensor".
  std::string full_name;
  /// "add", "Tensor" ("" when overload-less).
  std::string name;
  std::string overload;
  spec::OpKind kind = spec::OpKind::kKernel;
  /// The spec's group flag (always false for builtin and stub).
  bool group = false;
  /// Every function registered through this entry, sorted by (name,
  /// overload); exactly one is primary. Without a group, only the primary.
  std::vector<Registration> members;
  /// Kind kernel: the user-written function, e.g. kernel_add_Tensor, in the
  /// backend namespace; "" for other kinds.
  std::string kernel_name;
  /// Kind kernel: the user-owned file holding it, e.g.
  /// "kernels/add_Tensor.cpp" (one per kernel group); "" for other kinds.
  std::string kernel_file;
  /// Kind stub: the DispatchStub to register, e.g. "abs_stub"; "" otherwise.
  std::string stub;
  /// Kind stub: the header declaring it ("ATen/native/UnaryOps.h"); "" when
  /// stub names were not checked.
  std::string stub_header;
  /// Kind stub: the at::native function whose CPU kernel calls the stub
  /// ("abs_out", "sin_out"): what the registration routes to.
  std::string stub_native;
  /// The dtypes it supports: its `dtypes:`, else backend.yaml's.
  std::vector<std::string> dtypes;
  /// The operators.yaml entry.
  SourceLoc loc;

  /// The listed form.
  const Registration& primary() const;
  /// The listed form's native_functions.yaml entry.
  const schema::NativeFunction& function() const { return *primary().function; }
  /// The listed form's C++ dispatcher signature.
  const schema::CppSignature& signature() const { return primary().signature; }
  /// The member named `full_name`, or nullptr.
  const Registration* member(std::string_view full_name) const;
};

/// One entry of `custom:`, resolved: an operator in the backend's namespace.
struct CustomOperator {
  /// The parsed schema (shared with the Backend's copies).
  std::shared_ptr<const schema::FunctionSchema> schema;
  /// The C++ signature of its kernels; bindings point into *schema.
  schema::CppSignature signature;
  /// "scaled_add" / "scaled_add.Tensor".
  std::string full_name;
  /// The library namespace: the backend's C++ namespace ("accel").
  std::string ns;
  /// "accel::scaled_add".
  std::string qualified_name;
  bool meta = true;
  bool autograd = false;
  /// The Python callable the conformance suite compares with ("torch.add");
  /// "" when the spec names none.
  std::string reference;
  /// Generated wrapper registered on PrivateUse1.
  std::string wrapper_name;
  /// User-written device kernel: kernel_<name>_<overload>.
  std::string kernel_name;
  /// User-written Meta kernel (shape function) when meta: meta_<...>.
  std::string meta_name;
  /// User-written backward when autograd: backward_<...>.
  std::string backward_name;
  /// User-owned file for the bodies: kernels/<name>_<overload>.cpp.
  std::string kernel_file;
  /// The custom entry.
  SourceLoc loc;
};

/// One operator of autocast.yaml, resolved.
struct AutocastRule {
  std::string full_name;
  spec::CastPolicy policy = spec::CastPolicy::kFp32;
  std::shared_ptr<const schema::NativeFunction> function;
  schema::CppSignature signature;
  /// fp32_append_dtype: the overload called instead, with the same
  /// arguments and a trailing `ScalarType dtype` ("norm.ScalarOpt_dtype").
  std::shared_ptr<const schema::NativeFunction> dtype_overload;
  /// banned: the error raised under autocast.
  std::string message;
  SourceLoc loc;
};

/// The validated backend. Built only by buildBackend; immutable after.
class Backend {
 public:
  /// backend.yaml with defaults filled in.
  const spec::BackendSpec& spec() const { return spec_; }
  const std::string& device() const { return spec_.device; }
  const std::string& package() const { return spec_.package; }
  const std::string& cppNamespace() const { return spec_.cpp_namespace; }
  int deviceCount() const { return spec_.device_count; }
  std::uint64_t memoryBytes() const { return spec_.memory_bytes; }
  spec::FallbackPolicy fallback() const { return spec_.fallback; }
  const spec::Features& features() const { return spec_.features; }
  /// The spec directory as given ("specs").
  const std::string& specDir() const { return spec_dir_; }

  /// Every operators.yaml entry, sorted by (name, overload).
  const std::vector<Operator>& operators() const { return operators_; }
  /// Custom operators, sorted by (name, overload).
  const std::vector<CustomOperator>& customOperators() const { return custom_; }
  /// Autocast rules sorted by (name, overload); empty when
  /// features.autocast is off.
  const std::vector<AutocastRule>& autocastRules() const { return autocast_; }
  spec::AutocastDtype autocastDtype() const { return autocast_dtype_; }

  /// The operator that registers `full_name` ("add_.Tensor"), directly or as
  /// a member of its group; nullptr when the backend leaves it to the
  /// global fallback.
  const Operator* findRegistration(std::string_view full_name) const;
  /// The custom operator named `full_name` (with or without the
  /// "<namespace>::" prefix), or nullptr.
  const CustomOperator* findCustom(std::string_view full_name) const;

 private:
  friend class BackendBuilder;

  spec::BackendSpec spec_;
  std::string spec_dir_;
  std::vector<Operator> operators_;
  std::vector<CustomOperator> custom_;
  std::vector<AutocastRule> autocast_;
  spec::AutocastDtype autocast_dtype_ = spec::AutocastDtype::kFloat16;
  /// Full name of every registered function to its index in operators_.
  std::map<std::string, std::size_t, std::less<>> registration_index_;
};

/// What buildBackend needs besides the specs and the schemas.
struct BuildOptions {
  /// The installed torch's include directory (TorchInstall::include_dir);
  /// stub names are checked against the DispatchStubs declared there.
  std::string torch_include_dir;
  /// Known DispatchStubs and their headers; when set, used instead of
  /// scanning torch_include_dir (tests). With neither, stub names are not
  /// checked and a warning says so.
  std::optional<schema::DispatchStubs> dispatch_stubs;
};

/// Validates `specs` against `registry` and builds the Backend; every problem
/// goes to `diags`. nullopt when any was an error.
std::optional<Backend> buildBackend(const spec::Specs& specs,
                                    const schema::SchemaRegistry& registry,
                                    DiagnosticEngine& diags,
                                    const BuildOptions& options = {});

/// The hook operators every backend registers (Note [Hook operators] in
/// runtime/include/accgen/runtime/HookOps.h), by full name, with the
/// runtime function that emulates each.
struct HookOperator {
  const char* name;  ///< "convolution_overrideable"
  const char*
      function;  ///< "::accgen::runtime::hooks::convolutionOverrideable"
};
const std::vector<HookOperator>& hookOperators();

/// The runtime function emulating hook operator `full_name`; nullptr for
/// any other operator.
const char* hookFunction(const std::string& full_name);

/// The operators whose CompositeExplicitAutograd kernel refuses the device
/// and so shadows the global fallback (Note [The runtime's operator sets]),
/// by full name, with their at::_ops struct ("mode_values").
struct ShadowedOperator {
  const char* name;
  const char* ops;
};
const std::vector<ShadowedOperator>& shadowedOperators();

}  // namespace accgen::model
