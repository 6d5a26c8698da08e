// The spec model: backend.yaml, operators.yaml and autocast.yaml loaded into
// plain structs.
//
// This layer knows YAML and the spec formats (docs/specs.md) but nothing of
// PyTorch's operators: it checks keys, types and values that can be judged on
// their own (an identifier, a size, a kind name) and records where every
// entity came from. Whether an operator exists and whether its kind suits it
// is the backend model's job (generator/model). Every problem is reported to
// a DiagnosticEngine; loading goes on after an error so that one run reports
// them all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "generator/support/diagnostics.h"

namespace accgen::spec {

/// What happens to an operator the spec does not list.
enum class FallbackPolicy {
  kEmulate,  ///< run its CPU kernel on the device memory, without copies
  kCpu,      ///< run it on the CPU, copying arguments and results
  kError,    ///< raise an error naming the operator
};

/// The spec's word for `policy` ("emulate", "cpu", "error").
const char* fallbackPolicyName(FallbackPolicy policy);

/// How operators.yaml registers an operator (DESIGN.md, "Operator
/// registration kinds"). kCustom is the kind of the `custom:` entries, which
/// are not listed with a `kind:`.
enum class OpKind { kBuiltin, kKernel, kStub, kEmulate, kFallback, kCustom };

/// Everything the generator decides from a registration kind, one row per
/// kind (kindTraitsTable() in operators_spec.cpp). Code that needs a fact
/// about a kind reads its row instead of comparing kinds.
struct KindTraits {
  OpKind kind;
  /// The spelling in operators.yaml and in messages: "emulate".
  std::string_view name;
  /// Written as `kind: <name>` in `operators:` (every kind but custom).
  bool listed = true;
  /// Accepts `group:`, and registers the group by default.
  bool groups = false;
  /// Accepts `stub:` (the DispatchStub it registers).
  bool takes_stub = false;
  /// Only the fixed builtin set may have it, and the set must have it.
  bool builtin_set = false;
  /// Runs the operator's CPU kernel, which it therefore needs; `cpu_runs`
  /// says how ("on device memory", "on copies").
  bool needs_cpu_kernel = false;
  std::string_view cpu_runs = {};
  /// Runs CPU code over device memory, which a device the host cannot
  /// address refuses when the backend is initialized (Note [Host access] in
  /// runtime/src/Driver.cpp); `host_copies` says whether
  /// features.host_copies runs it through the CPU fallback instead.
  bool host_code = false;
  bool host_copies = false;
  /// The user writes its body, in a user-owned kernels/<op>.cpp.
  bool user_kernel = false;
  /// The emitter (its registry name) that writes its registrations.
  std::string_view emitter;
};

/// Every kind's row, in enum order.
const std::vector<KindTraits>& kindTraitsTable();

/// The row of `kind`; an internal error (AccgenError kInternal) for a kind
/// without one.
const KindTraits& kindTraits(OpKind kind);

/// "builtin", "kernel", "stub", "emulate", "fallback", "custom".
std::string_view kindName(OpKind kind);

/// True for the kinds that accept `group:` (kernel, emulate, fallback).
bool kindAllowsGroup(OpKind kind);

/// The lower-precision dtype of autocast.yaml.
enum class AutocastDtype { kFloat16, kBFloat16 };

/// "float16", "bfloat16".
std::string_view dtypeName(AutocastDtype dtype);

/// One per `policies:` key: c10's at::autocast::CastPolicy, and `banned`.
enum class CastPolicy {
  kLowerPrecisionFp,
  kFp32,
  kFp32SetOptDtype,
  kFp32AppendDtype,
  kPromote,
  /// Not a c10 policy: the operator raises an error under autocast (CUDA's
  /// binary_cross_entropy).
  kBanned,
};

/// The spelling in autocast.yaml and in c10: "lower_precision_fp", "fp32",
/// "fp32_set_opt_dtype", "fp32_append_dtype", "promote"; "banned".
std::string_view policyName(CastPolicy policy);

/// Every dtype name `dtypes:` accepts, in a fixed order.
const std::vector<std::string>& knownDtypeNames();

/// `features:` of backend.yaml.
struct Features {
  bool pinned_memory = true;
  bool autocast = true;
  /// Where the host cannot address device memory, `emulate` entries and the
  /// emulate fallback run through the CPU fallback with copies (else they
  /// are refused).
  bool host_copies = false;
};

/// backend.yaml. Defaults are filled in: package, cpp_namespace always hold
/// the effective names.
struct BackendSpec {
  /// The torch device type ("accel").
  std::string device;
  /// Python package name; torch_<device> unless given.
  std::string package;
  /// C++ namespace; <device> unless given.
  std::string cpp_namespace;
  /// Number of emulated devices, 1..64.
  int device_count = 2;
  /// Capacity of each emulated device in bytes.
  std::uint64_t memory_bytes = std::uint64_t{4} << 30;
  FallbackPolicy fallback = FallbackPolicy::kEmulate;
  Features features;
  /// The dtypes the device supports (`dtypes:`), as torch names them
  /// without the prefix ("float32"); the generated conformance suite tests
  /// operators over these.
  std::vector<std::string> dtypes = {
      "float32", "float64", "float16", "bfloat16", "int64", "int32", "bool"};

  /// The file (line 0).
  SourceLoc loc;
  /// The `device:` value.
  SourceLoc device_loc;
};

/// One item of `operators:`.
struct OperatorEntry {
  /// As written: "add.Tensor", "mm".
  std::string op;
  /// The part before the dot: "add".
  std::string name;
  /// The part after the dot, "" for "mm".
  std::string overload;
  OpKind kind = OpKind::kKernel;
  /// Register the functional/in-place/out siblings too; always false for
  /// builtin and stub.
  bool group = false;
  /// `stub:` when given (kind stub only); the model supplies the default.
  std::optional<std::string> stub;
  /// `dtypes:`: the dtypes the operator supports, a subset of backend.yaml's;
  /// empty when not given (all of backend.yaml's).
  std::vector<std::string> dtypes;

  /// The item (its first key).
  SourceLoc loc;
  /// The `op:` value.
  SourceLoc op_loc;
  /// The `kind:` value.
  SourceLoc kind_loc;
  /// The `stub:` value, or loc when it is not given.
  SourceLoc stub_loc;
  /// The `dtypes:` key, or loc when it is not given.
  SourceLoc dtypes_loc;
};

/// One item of `custom:`.
struct CustomOpEntry {
  /// The schema text, e.g. "scaled_add(Tensor self, Tensor other, float
  /// alpha=1.0) -> Tensor".
  std::string schema;
  /// Generate a Meta kernel (shape function).
  bool meta = true;
  /// Generate forward + backward registration; the backward body is
  /// user-written.
  bool autograd = false;
  /// `reference:`: a Python callable ("torch.add") computing the operator
  /// on the CPU; the conformance suite compares the device with it. Empty:
  /// the suite checks the device against the Meta kernel only.
  std::string reference;

  /// The item (its first key).
  SourceLoc loc;
  /// The first character of the schema text itself (past an opening quote),
  /// so that loc.column + parse column points at the offending character.
  SourceLoc schema_loc;
};

/// operators.yaml.
struct OperatorsSpec {
  std::vector<OperatorEntry> operators;
  std::vector<CustomOpEntry> custom;

  /// The file (line 0).
  SourceLoc loc;
  /// The `operators:` key.
  SourceLoc operators_loc;
};

/// One operator named in autocast.yaml.
struct AutocastEntry {
  /// "mm", "softmax.int".
  std::string op;
  CastPolicy policy = CastPolicy::kFp32;
  /// kBanned: the error message raised under autocast.
  std::string message;
  SourceLoc loc;
};

/// autocast.yaml; `present` is false when the file does not exist.
struct AutocastSpec {
  bool present = false;
  AutocastDtype dtype = AutocastDtype::kFloat16;
  /// In file order: policies in the order written, operators within them.
  std::vector<AutocastEntry> entries;

  /// The file (line 0).
  SourceLoc loc;
};

/// Every spec of one backend.
struct Specs {
  BackendSpec backend;
  OperatorsSpec operators;
  AutocastSpec autocast;
  /// The spec directory as the caller gave it.
  std::string dir;
};

/// Loads <dir>/backend.yaml, <dir>/operators.yaml and, when present,
/// <dir>/autocast.yaml. Reports every problem to `diags` with paths spelt
/// "<dir>/<file>"; returns nullopt when any was an error.
std::optional<Specs> loadSpecs(const std::string& dir, DiagnosticEngine& diags);

/// Parses backend.yaml text as if read from `path`; nullopt after errors.
std::optional<BackendSpec> parseBackendSpec(std::string_view text,
                                            const std::string& path,
                                            DiagnosticEngine& diags);

/// Parses operators.yaml text as if read from `path`; nullopt after errors.
std::optional<OperatorsSpec> parseOperatorsSpec(std::string_view text,
                                                const std::string& path,
                                                DiagnosticEngine& diags);

/// The two readers behind parseOperatorsSpec (Note [Quick operators.yaml]
/// in operators_spec.cpp): the quick one, nullopt for a file it leaves to
/// yaml-cpp (it reports nothing), and the yaml-cpp one, which reads any
/// file and reports every problem.
std::optional<OperatorsSpec> readOperatorsSpecQuickly(std::string_view text,
                                                      const std::string& path);
std::optional<OperatorsSpec> readOperatorsSpecWithYamlCpp(
    std::string_view text, const std::string& path, DiagnosticEngine& diags);

/// Parses autocast.yaml text as if read from `path`; nullopt after errors.
std::optional<AutocastSpec> parseAutocastSpec(std::string_view text,
                                              const std::string& path,
                                              DiagnosticEngine& diags);

/// Parses a memory size: "4096", "64KiB", "512MiB", "4GiB", "1TiB". Returns
/// nullopt for anything else, zero, or a value that overflows int64.
std::optional<std::uint64_t> parseMemorySize(std::string_view text);

}  // namespace accgen::spec
