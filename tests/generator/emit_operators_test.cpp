// The operator emitter: which files each kind of spec entry produces, how
// each emulated operator runs (through its out= overload with a C++ meta
// function, or directly), how a kernel group's wrappers derive from its
// primary, the custom operator's registrations, autocast, both fallback
// policies, and that every file renders (strictly) into stable text.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"
#include "generator/render/renderer.h"
#include "generator/schema/schema.h"
#include "generator/spec/spec.h"
#include "generator/support/diagnostics.h"

namespace accgen::emit {
namespace {

namespace fs = std::filesystem;

const char* const kBuiltins =
    "  - {op: empty.memory_format, kind: builtin}\n"
    "  - {op: empty_strided, kind: builtin}\n"
    "  - {op: as_strided, kind: builtin}\n"
    "  - {op: resize_, kind: builtin}\n"
    "  - {op: _reshape_alias, kind: builtin}\n"
    "  - {op: _copy_from, kind: builtin}\n"
    "  - {op: _copy_from_and_resize, kind: builtin}\n"
    "  - {op: _local_scalar_dense, kind: builtin}\n"
    "  - {op: set_.source_Storage, kind: builtin}\n"
    "  - {op: set_.source_Storage_storage_offset, kind: builtin}\n"
    "  - {op: set_.source_Tensor, kind: builtin}\n"
    "  - {op: set_, kind: builtin}\n"
    "  - {op: view, kind: builtin}\n";

const std::string kEveryKind =
    std::string("operators:\n") + kBuiltins +
    "  - {op: add.Tensor, kind: emulate}\n"
    "  - {op: index_select, kind: emulate}\n"
    "  - {op: nonzero, kind: emulate}\n"
    "  - {op: index.Tensor, kind: emulate}\n"
    "  - {op: mm, kind: kernel, group: false}\n"
    "  - {op: mul.out, kind: kernel}\n"
    "  - {op: relu, kind: kernel}\n"
    "  - {op: abs.out, kind: stub, stub: abs_stub}\n"
    "  - {op: cumsum, kind: fallback}\n"
    "custom:\n"
    "  - schema: \"scaled_add(Tensor self, Tensor other, float alpha=1.0) -> "
    "Tensor\"\n"
    "    autograd: true\n";

const char* const kAutocast =
    "dtype: bfloat16\n"
    "policies:\n"
    "  lower_precision_fp: [mm]\n"
    "  fp32: [softmax.int]\n";

class OperatorFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch_ = new schema::TorchInstall(schema::findTorch());
    registry_ = new schema::SchemaRegistry(
        schema::SchemaRegistry::load(torch_->native_functions_yaml));
  }
  static void TearDownTestSuite() {
    delete registry_;
    delete torch_;
  }

  static model::Backend backend(
      const std::string& operators,
      const std::string& backend_yaml = "device: accel\n",
      const std::string& autocast = kAutocast) {
    DiagnosticEngine diags;
    spec::Specs specs;
    specs.dir = "specs";
    auto b = spec::parseBackendSpec(backend_yaml, "specs/backend.yaml", diags);
    auto o = spec::parseOperatorsSpec(operators, "specs/operators.yaml", diags);
    auto a = spec::parseAutocastSpec(autocast, "specs/autocast.yaml", diags);
    std::ostringstream printed;
    diags.print(printed);
    EXPECT_TRUE(b && o && a) << printed.str();
    specs.backend = *b;
    specs.operators = *o;
    specs.autocast = *a;
    model::BuildOptions options;
    options.dispatch_stubs =
        schema::DispatchStubs{{"abs_stub", "ATen/native/UnaryOps.h"}};
    auto built = model::buildBackend(specs, *registry_, diags, options);
    diags.print(printed);
    EXPECT_TRUE(built.has_value()) << printed.str();
    return std::move(*built);
  }

  // Path -> rendered text, rendered as the pipeline does.
  static std::map<std::string, std::string> rendered(const model::Backend& b) {
    render::TemplateSet templates(
        (fs::path(ACCGEN_SOURCE_DIR) / "templates").string());
    const nlohmann::json global = globalContext(b, RunInfo{"2.13.0"});
    std::map<std::string, std::string> out;
    for (const auto& file : emitOperators(b)) {
      nlohmann::json data = global;
      data["source"] = file.source;
      for (const auto& [key, value] : file.data.items())
        data[key] = value;
      out[file.path] = templates.render(file.template_name, data);
    }
    return out;
  }

  static schema::TorchInstall* torch_;
  static schema::SchemaRegistry* registry_;
};

schema::TorchInstall* OperatorFiles::torch_ = nullptr;
schema::SchemaRegistry* OperatorFiles::registry_ = nullptr;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST_F(OperatorFiles, EveryKindHasItsFiles) {
  const auto b = backend(kEveryKind);
  std::vector<std::string> paths;
  std::vector<std::string> user_owned;
  for (const auto& f : emitOperators(b)) {
    paths.push_back(f.path);
    if (f.user_owned) user_owned.push_back(f.path);
    EXPECT_TRUE(
        fs::exists(fs::path(ACCGEN_SOURCE_DIR) / "templates" / f.template_name))
        << f.template_name;
  }
  std::sort(paths.begin(), paths.end());
  const std::vector<std::string> expected = {
      "csrc/ops/Autocast.cpp",         "csrc/ops/CustomOps.cpp",
      "csrc/ops/KernelDecls.h",        "csrc/ops/RegisterEmulate_0.cpp",
      "csrc/ops/RegisterFallback.cpp", "csrc/ops/RegisterKernels.cpp",
      "csrc/ops/RegisterStubs.cpp",    "kernels/mm.cpp",
      "kernels/mul_out.cpp",           "kernels/relu.cpp",
      "kernels/scaled_add.cpp",
  };
  EXPECT_EQ(paths, expected);
  std::sort(user_owned.begin(), user_owned.end());
  EXPECT_EQ(user_owned, (std::vector<std::string>{
                            "kernels/mm.cpp", "kernels/mul_out.cpp",
                            "kernels/relu.cpp", "kernels/scaled_add.cpp"}));
}

TEST_F(OperatorFiles, OnlyBuiltinsGiveAutocastTheFallbackAndTheHooks) {
  const auto b = backend(std::string("operators:\n") + kBuiltins,
                         "device: accel\n", "dtype: float16\n");
  std::vector<std::string> paths;
  for (const auto& f : emitOperators(b))
    paths.push_back(f.path);
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(paths, (std::vector<std::string>{"csrc/ops/Autocast.cpp",
                                             "csrc/ops/RegisterEmulate_0.cpp",
                                             "csrc/ops/RegisterFallback.cpp"}));
  // The hook operators, emulated by the runtime, whatever the spec lists.
  const auto files = rendered(b);
  const std::string& emulate = files.at("csrc/ops/RegisterEmulate_0.cpp");
  for (const auto& hook : model::hookOperators()) {
    EXPECT_TRUE(has(emulate, std::string("m.impl(\"") + hook.name +
                                 "\", TORCH_FN(" + hook.function + "));"))
        << hook.name;
  }
  // Under the emulate fallback, the operators whose composite kernel would
  // refuse the device are emulated too, and nothing else.
  std::size_t emulated = 0;
  for (std::size_t at = emulate.find("emulate::kernel<");
       at != std::string::npos; at = emulate.find("emulate::kernel<", at + 1)) {
    ++emulated;
  }
  EXPECT_EQ(emulated, model::shadowedOperators().size());
  for (const auto& op : model::shadowedOperators()) {
    EXPECT_TRUE(has(emulate, std::string("m.impl(\"") + op.name +
                                 "\", emulate::kernel<at::_ops::" + op.ops +
                                 ">());"))
        << op.name;
  }
  // The default global policy: the emulate fallback.
  EXPECT_TRUE(has(files.at("csrc/ops/RegisterFallback.cpp"),
                  "m.fallback(torch::CppFunction::"
                  "makeFromBoxedFunction<&emulateFallback>());"));
}

TEST_F(OperatorFiles, HookOperatorsMoveToKernelsLikeAnyOther) {
  const auto files =
      rendered(backend(std::string("operators:\n") + kBuiltins +
                       "  - {op: convolution_overrideable, kind: kernel}\n"
                       "  - {op: _thnn_fused_lstm_cell, kind: emulate}\n"));
  const std::string& emulate = files.at("csrc/ops/RegisterEmulate_0.cpp");
  // The kernel replaces the runtime's emulation; the other hooks stay.
  EXPECT_FALSE(has(emulate, "\"convolution_overrideable\""));
  EXPECT_TRUE(has(emulate, "\"convolution_backward_overrideable\""));
  // An emulate entry of a hook is the hook alone: its out= form is a
  // composite of it, which the CPU kernel could not run.
  EXPECT_TRUE(has(emulate,
                  "m.impl(\"_thnn_fused_lstm_cell\", "
                  "TORCH_FN(::accgen::runtime::hooks::thnnFusedLstmCell));"));
  EXPECT_FALSE(has(emulate, "_thnn_fused_lstm_cell.out"));
  const std::string& starter = files.at("kernels/convolution_overrideable.cpp");
  EXPECT_TRUE(has(starter,
                  "return ::accgen::runtime::hooks::convolutionOverrideable("
                  "input, weight, bias, stride, padding, dilation, "
                  "transposed, output_padding, groups);"))
      << starter;
  EXPECT_TRUE(has(files.at("csrc/ops/RegisterKernels.cpp"),
                  "\"convolution_overrideable\""));
}

TEST_F(OperatorFiles, EmulateEntriesStateTheOperatorAndItsShapeFunction) {
  const auto files = rendered(backend(kEveryKind));
  const std::string& emulate = files.at("csrc/ops/RegisterEmulate_0.cpp");
  // add.Tensor, the functional member of a structured group: its at::_ops
  // struct and its C++ shape function (at::meta::add). How it runs is the
  // runtime's decision.
  EXPECT_TRUE(
      has(emulate,
          "m.impl(\"add.Tensor\", emulate::kernel<at::_ops::add_Tensor, "
          "&shape_add_Tensor>());"))
      << emulate;
  EXPECT_TRUE(has(emulate, "return at::meta::add(self, other, alpha);"));
  EXPECT_TRUE(has(emulate, "#include <ATen/ops/add_meta_dispatch.h>"));
  EXPECT_TRUE(has(emulate, "#include <ATen/ops/add_ops.h>"));
  // Its group's in-place form: the shape function checks its arguments
  // before the operator is queued (Note [Queued operators]).
  EXPECT_TRUE(has(emulate,
                  "m.impl(\"add_.Tensor\", "
                  "emulate::kernel<at::_ops::add__Tensor, "
                  "&shape_add__Tensor>());"))
      << emulate;
  EXPECT_TRUE(has(emulate, "return at::meta::add_(self, other, alpha);"));
  // The out= form: the operator alone.
  EXPECT_TRUE(has(
      emulate, "m.impl(\"add.out\", emulate::kernel<at::_ops::add_out>());"));
  // No C++ shape function (index_select), or shapes that depend on the data
  // (nonzero; index with a mask, although structured): the operator alone.
  EXPECT_TRUE(has(emulate,
                  "m.impl(\"index_select\", "
                  "emulate::kernel<at::_ops::index_select>());"));
  EXPECT_TRUE(has(
      emulate, "m.impl(\"nonzero\", emulate::kernel<at::_ops::nonzero>());"));
  EXPECT_TRUE(has(emulate,
                  "m.impl(\"index.Tensor\", "
                  "emulate::kernel<at::_ops::index_Tensor>());"));
  EXPECT_FALSE(has(emulate, "at::meta::index("));
}

TEST_F(OperatorFiles, EmulateRegistrationsAreShardedInOrder) {
  // 41 grouped operators, 3 registrations each, and the 8 hook
  // operators: 131, two files of at most 120.
  std::string ops = std::string("operators:\n") + kBuiltins;
  for (const char* op :
       {"abs",     "acos",  "acosh", "add.Tensor", "asin",    "asinh",
        "atan",    "atanh", "ceil",  "cos",        "cosh",    "deg2rad",
        "digamma", "erf",   "erfc",  "erfinv",     "exp",     "exp2",
        "expm1",   "floor", "frac",  "i0",         "lgamma",  "log",
        "log10",   "log1p", "log2",  "neg",        "rad2deg", "reciprocal",
        "round",   "rsqrt", "sgn",   "sigmoid",    "sign",    "sin",
        "sinh",    "sqrt",  "tan",   "tanh",       "trunc"}) {
    ops += std::string("  - {op: ") + op + ", kind: emulate}\n";
  }
  const auto files = rendered(backend(ops));
  ASSERT_TRUE(files.count("csrc/ops/RegisterEmulate_0.cpp"));
  ASSERT_TRUE(files.count("csrc/ops/RegisterEmulate_1.cpp"));
  EXPECT_FALSE(files.count("csrc/ops/RegisterEmulate_2.cpp"));
  const std::string& first = files.at("csrc/ops/RegisterEmulate_0.cpp");
  const std::string& second = files.at("csrc/ops/RegisterEmulate_1.cpp");
  EXPECT_TRUE(has(first, "part 0 of 2"));
  EXPECT_TRUE(has(second, "part 1 of 2"));
  // Sorted by (name, overload) across the shards: the hooks whose names
  // start with '_' first, trunc_ last.
  EXPECT_LT(first.find("\"_thnn_fused_gru_cell\""), first.find("\"abs\""));
  EXPECT_LT(first.find("\"abs\""), first.find("\"ceil\""));
  EXPECT_TRUE(has(second, "\"trunc_\""));
  EXPECT_FALSE(has(first, "\"trunc_\""));
  int count = 0;
  for (const auto* text : {&first, &second}) {
    for (std::size_t at = text->find("m.impl("); at != std::string::npos;
         at = text->find("m.impl(", at + 1)) {
      ++count;
    }
  }
  EXPECT_EQ(count, 132);
}

TEST_F(OperatorFiles, ShadowedOperatorsFollowTheSpec) {
  // Listed in the spec: its own registration, not the runtime's emulation.
  const auto listed =
      rendered(backend(std::string("operators:\n") + kBuiltins +
                       "  - {op: mode.values, kind: fallback}\n"));
  EXPECT_FALSE(
      has(listed.at("csrc/ops/RegisterEmulate_0.cpp"), "\"mode.values\""));
  // Another global fallback: left to the composite kernel, which raises.
  const auto cpu = rendered(backend(std::string("operators:\n") + kBuiltins,
                                    "device: accel\nfallback: cpu\n"));
  EXPECT_FALSE(
      has(cpu.at("csrc/ops/RegisterEmulate_0.cpp"), "\"mode.values\""));
}

TEST_F(OperatorFiles, KernelGroupsDeriveFromTheirPrimary) {
  const auto files = rendered(backend(kEveryKind));
  const std::string& decls = files.at("csrc/ops/KernelDecls.h");
  EXPECT_TRUE(has(decls,
                  "at::Tensor& kernel_mul_out(const at::Tensor& self, const "
                  "at::Tensor& other, at::Tensor& out);"))
      << decls;
  EXPECT_TRUE(has(decls, "also serves mul.Tensor, mul_.Tensor"));
  EXPECT_TRUE(has(decls,
                  "at::Tensor kernel_mm(const at::Tensor& self, const "
                  "at::Tensor& mat2);"));
  const std::string& reg = files.at("csrc/ops/RegisterKernels.cpp");
  // Functional from out=: meta shapes (kept for the arguments' key), then
  // the out= kernel.
  EXPECT_TRUE(has(reg,
                  "  static ShapeCache shape_cache;\n"
                  "  const ShapeCache::Results shapes = resultShapes("
                  "shape_cache, [&] { return at::meta::mul(toMeta(self), "
                  "toMeta(other)); }, self, other);\n  at::Tensor out = "
                  "emptyLike(shapes[0], deviceOf(self));\n  "
                  "kernels::kernel_mul_out(self, other, out);\n  return out;"))
      << reg;
  // In-place from out=: self as out.
  EXPECT_TRUE(has(reg,
                  "kernels::kernel_mul_out(self, other, self);\n  return "
                  "self;"));
  // In-place from a functional primary (relu_ from relu).
  EXPECT_TRUE(has(reg,
                  "  const auto result = kernels::kernel_relu(self);\n  "
                  "self.copy_(result);\n  return self;"));
  // group: false registers the listed form only.
  EXPECT_TRUE(has(reg, "m.impl(\"mm\", TORCH_FN(wrapper_mm));"));
  EXPECT_FALSE(has(reg, "\"mm.out\""));
  for (const char* op :
       {"mul.Tensor", "mul_.Tensor", "mul.out", "relu", "relu_"}) {
    EXPECT_TRUE(has(reg, std::string("m.impl(\"") + op + "\", TORCH_FN("))
        << op;
  }
  // The starter works from the start, through the emulation.
  EXPECT_TRUE(has(files.at("kernels/mul_out.cpp"),
                  "return emulate::call<at::_ops::mul_out>(self, other, "
                  "out);"));
  EXPECT_TRUE(has(files.at("kernels/mm.cpp"),
                  "return emulate::call<at::_ops::mm>(self, mat2);"));
}

TEST_F(OperatorFiles, BannedOperatorsRaiseTheirMessage) {
  const auto files =
      rendered(backend(kEveryKind, "device: accel\n",
                       "policies:\n"
                       "  fp32: [exp]\n"
                       "  banned:\n"
                       "    - op: binary_cross_entropy\n"
                       "      message: |-\n"
                       "        unsafe to \"autocast\" \\ here.\n"
                       "        Use binary_cross_entropy_with_logits.\n"));
  const std::string& autocast = files.at("csrc/ops/Autocast.cpp");
  EXPECT_TRUE(has(autocast,
                  "// binary_cross_entropy (banned): refused under autocast.\n"
                  "at::Tensor autocast_binary_cross_entropy(const at::Tensor&, "
                  "const at::Tensor&, const ::std::optional<at::Tensor>&, "
                  "int64_t) {\n"
                  "  TORCH_CHECK(\n"
                  "      false,\n"
                  "      \"unsafe to \\\"autocast\\\" \\\\ here.\\n\"\n"
                  "      \"Use binary_cross_entropy_with_logits.\");\n"
                  "}\n"))
      << autocast;
  EXPECT_TRUE(has(autocast,
                  "  m.impl(\"binary_cross_entropy\", "
                  "TORCH_FN(autocast_binary_cross_entropy));\n"));
  EXPECT_TRUE(has(autocast, "KERNEL_PRIVATEUSEONE(exp, fp32)"));
  // A banned operator calls nothing: no header of its own.
  EXPECT_FALSE(has(autocast, "binary_cross_entropy_ops.h"));
}

TEST_F(OperatorFiles, StubsCustomOperatorsAutocastAndFallback) {
  const auto files = rendered(backend(kEveryKind));
  const std::string& stubs = files.at("csrc/ops/RegisterStubs.cpp");
  EXPECT_TRUE(has(stubs, "return at::native::abs_out(self, out);"));
  EXPECT_TRUE(has(stubs, "ACCGEN_STUB_ON_DEVICE(abs_stub)\n"));
  const std::string& custom = files.at("csrc/ops/CustomOps.cpp");
  EXPECT_TRUE(has(custom,
                  "ACCGEN_LIBRARY(accel, m) {\n  m.def(\"scaled_add("
                  "Tensor self, Tensor other, float alpha=1.0) -> "
                  "Tensor\");"));
  EXPECT_TRUE(has(custom, "ACCGEN_LIBRARY_IMPL(accel, Meta, m)"));
  EXPECT_TRUE(
      has(custom, "ACCGEN_LIBRARY_IMPL(accel, AutogradPrivateUse1, m)"));
  EXPECT_TRUE(has(custom, "ctx->saved_data[\"alpha\"] = alpha;"));
  EXPECT_TRUE(has(custom,
                  "kernels::backward_scaled_add(grad_outputs, "
                  "saved[0], saved[1], "
                  "ctx->saved_data[\"alpha\"].toDouble());"));
  const std::string& starter = files.at("kernels/scaled_add.cpp");
  EXPECT_TRUE(has(starter, "return at::empty_like(self);"));
  const std::string& autocast = files.at("csrc/ops/Autocast.cpp");
  EXPECT_TRUE(has(autocast, "KERNEL_PRIVATEUSEONE(mm, lower_precision_fp)"));
  EXPECT_TRUE(has(autocast, "KERNEL_PRIVATEUSEONE(softmax, int, fp32)"));
  EXPECT_TRUE(has(autocast, "at::kBFloat16"));
  EXPECT_TRUE(
      has(autocast, "m.fallback(torch::CppFunction::makeFallthrough());"));
  const std::string& fallback = files.at("csrc/ops/RegisterFallback.cpp");
  EXPECT_TRUE(has(fallback,
                  "m.impl(\"cumsum\", torch::CppFunction::"
                  "makeFromBoxedFunction<&cpuFallback>());"));
  EXPECT_TRUE(has(fallback, "m.impl(\"cumsum_\","));
  EXPECT_TRUE(has(fallback,
                  "m.fallback(torch::CppFunction::"
                  "makeFromBoxedFunction<&emulateFallback>());"));
  EXPECT_FALSE(has(fallback, "notImplemented"));
}

TEST_F(OperatorFiles, ErrorPolicyNamesTheOperatorAndTheDevice) {
  const auto files =
      rendered(backend(kEveryKind, "device: npu\nfallback: error\n"));
  const std::string& fallback = files.at("csrc/ops/RegisterFallback.cpp");
  EXPECT_TRUE(has(fallback,
                  "m.fallback(torch::CppFunction::"
                  "makeFromBoxedFunction<&notImplementedFallback>());"))
      << fallback;
  // The per-operator fallback stays.
  EXPECT_TRUE(has(fallback, "m.impl(\"cumsum\","));
  // What torch needs to create and print tensors stays on the CPU, unless
  // the spec registers it (abs.out is a stub here).
  EXPECT_TRUE(has(fallback, "m.impl(\"zero_\","));
  EXPECT_TRUE(has(fallback, "m.impl(\"masked_select\","));
  EXPECT_FALSE(has(fallback, "m.impl(\"abs.out\","));
  // The cpu policy needs none of that.
  const auto cpu = rendered(backend(kEveryKind));
  EXPECT_FALSE(has(cpu.at("csrc/ops/RegisterFallback.cpp"), "\"zero_\""));
}

TEST_F(OperatorFiles, TextIsStableAndClean) {
  const auto b = backend(kEveryKind);
  const auto first = rendered(b);
  const auto second = rendered(b);
  EXPECT_EQ(first, second);
  for (const auto& [path, text] : first) {
    ASSERT_FALSE(text.empty()) << path;
    EXPECT_EQ(text.back(), '\n') << path;
    EXPECT_FALSE(has(text, " \n")) << path << ": trailing space";
    EXPECT_FALSE(has(text, "\n\n\n")) << path << ": two blank lines";
    EXPECT_FALSE(has(text, "{{")) << path;
    EXPECT_FALSE(has(text, "\r")) << path;
  }
}

TEST_F(OperatorFiles, StructuredStubsRunTheirKernelClass) {
  const auto files =
      rendered(backend(std::string("operators:\n") + kBuiltins +
                       "  - {op: sin.out, kind: stub, stub: abs_stub}\n"));
  const std::string& stubs = files.at("csrc/ops/RegisterStubs.cpp");
  EXPECT_TRUE(has(stubs,
                  "  IntoOutput<at::native::structured_sin_out> kernel(out);\n"
                  "  kernel.meta(self);\n"
                  "  kernel.impl(self, kernel.maybe_get_output(0));\n"
                  "  return out;"))
      << stubs;
}

TEST_F(OperatorFiles, KernelWrappersFollowTheModelsDerivation) {
  const auto b = backend(std::string("operators:\n") + kBuiltins +
                         "  - {op: add.out, kind: kernel}\n");
  const model::Operator* add = b.findRegistration("add.out");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->member("add.Tensor")->derivation,
            model::Derivation::kFunctionalFromOut);
  EXPECT_EQ(add->member("add_.Tensor")->derivation,
            model::Derivation::kInplaceFromOut);
  EXPECT_EQ(add->primary().derivation, model::Derivation::kDirect);
}

// An operator whose kind no emitter writes is a bug in
// accgen, reported as one, never left out of the output.
TEST_F(OperatorFiles, UnhandledKindsAreInternalErrors) {
  const auto b = backend(kEveryKind);
  try {
    requireHandledKinds(b, "a test emitter", [](const spec::KindTraits& t) {
      return t.kind != spec::OpKind::kStub;
    });
    FAIL() << "expected an internal error";
  } catch (const AccgenError& e) {
    EXPECT_EQ(e.code(), ExitCode::kInternal);
    EXPECT_TRUE(has(e.what(), "a test emitter has no files for kind stub"))
        << e.what();
  }
  EXPECT_NO_THROW(requireHandledKinds(
      b, "a test emitter", [](const spec::KindTraits&) { return true; }));
}

}  // namespace
}  // namespace accgen::emit
