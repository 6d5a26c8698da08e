// Backend model tests against the installed torch's native_functions.yaml:
// how listed operators resolve, which siblings a group registers, the names
// and signatures emitters receive, custom operators, autocast rules and the
// registration lookup behind `accgen inspect`.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <sstream>

#include "generator/model/backend.h"
#include "generator/schema/schema.h"
#include "generator/spec/spec.h"
#include "tests/generator/test_support.h"

namespace accgen::model {
namespace {

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

class RealTorch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch_ = new schema::TorchInstall(schema::findTorch());
    registry_ = new schema::SchemaRegistry(
        schema::SchemaRegistry::load(torch_->native_functions_yaml));
    stubs_ = new schema::DispatchStubs(
        schema::findDispatchStubs(torch_->include_dir));
  }
  static void TearDownTestSuite() {
    delete stubs_;
    delete registry_;
    delete torch_;
  }

  // Specs from text, as if read from the directory "specs".
  static spec::Specs specs(const std::string& operators,
                           const std::string& backend = "device: accel\n",
                           const std::string& autocast = "") {
    DiagnosticEngine diags;
    spec::Specs s;
    s.dir = "specs";
    auto b = spec::parseBackendSpec(backend, "specs/backend.yaml", diags);
    auto o = spec::parseOperatorsSpec(operators, "specs/operators.yaml", diags);
    EXPECT_TRUE(b && o) << printed(diags);
    if (b) s.backend = *b;
    if (o) s.operators = *o;
    if (!autocast.empty()) {
      auto a = spec::parseAutocastSpec(autocast, "specs/autocast.yaml", diags);
      EXPECT_TRUE(a) << printed(diags);
      if (a) s.autocast = *a;
    }
    return s;
  }

  static std::optional<Backend> build(const spec::Specs& s,
                                      DiagnosticEngine& diags) {
    BuildOptions options;
    options.dispatch_stubs = *stubs_;
    return buildBackend(s, *registry_, diags, options);
  }

  static std::vector<std::string> memberNames(const Operator& op) {
    std::vector<std::string> names;
    for (const auto& m : op.members)
      names.push_back(m.fullName());
    return names;
  }

  static schema::TorchInstall* torch_;
  static schema::SchemaRegistry* registry_;
  static schema::DispatchStubs* stubs_;
};

schema::TorchInstall* RealTorch::torch_ = nullptr;
schema::SchemaRegistry* RealTorch::registry_ = nullptr;
schema::DispatchStubs* RealTorch::stubs_ = nullptr;

const std::string kBaseOperators =
    std::string("operators:\n") + kBuiltins +
    "  - {op: add.Tensor, kind: emulate}\n"
    "  - {op: mul.Tensor, kind: kernel}\n"
    "  - {op: abs.out, kind: stub, stub: abs_stub}\n"
    "  - {op: mm, kind: kernel, group: false}\n"
    "  - {op: cumsum, kind: fallback}\n"
    "custom:\n"
    "  - schema: \"scaled_add(Tensor self, Tensor other, float alpha=1.0) -> "
    "Tensor\"\n"
    "    autograd: true\n";

TEST_F(RealTorch, OperatorsAreSortedByNameThenOverload) {
  DiagnosticEngine diags;
  auto backend = build(specs(kBaseOperators), diags);
  ASSERT_TRUE(backend) << printed(diags);
  EXPECT_TRUE(diags.diagnostics().empty()) << printed(diags);
  std::vector<std::string> names;
  for (const auto& op : backend->operators())
    names.push_back(op.full_name);
  EXPECT_EQ(
      names,
      (std::vector<std::string>{
          "_copy_from", "_copy_from_and_resize", "_local_scalar_dense",
          "_reshape_alias", "abs.out", "add.Tensor", "as_strided", "cumsum",
          "empty.memory_format", "empty_strided", "mm", "mul.Tensor", "resize_",
          "set_", "set_.source_Storage", "set_.source_Storage_storage_offset",
          "set_.source_Tensor", "view"}));
}

TEST_F(RealTorch, GroupsRegisterTheSiblings) {
  DiagnosticEngine diags;
  auto backend = build(specs(kBaseOperators), diags);
  ASSERT_TRUE(backend) << printed(diags);

  const Operator* add = backend->findRegistration("add.Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->kind, spec::OpKind::kEmulate);
  EXPECT_EQ(memberNames(*add),
            (std::vector<std::string>{"add.Tensor", "add.out", "add_.Tensor"}));
  EXPECT_EQ(add->primary().fullName(), "add.Tensor");
  EXPECT_EQ(add->member("add.out")->role, schema::SchemaKind::kOut);
  EXPECT_EQ(add->member("add_.Tensor")->role, schema::SchemaKind::kInplace);
  EXPECT_FALSE(add->member("add.out")->primary);

  const Operator* mm = backend->findRegistration("mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(memberNames(*mm), (std::vector<std::string>{"mm"}));
  // Without a group, mm.out stays with the global fallback.
  EXPECT_EQ(backend->findRegistration("mm.out"), nullptr);

  const Operator* cumsum = backend->findRegistration("cumsum_");
  ASSERT_NE(cumsum, nullptr);
  EXPECT_EQ(cumsum->full_name, "cumsum");
  EXPECT_EQ(memberNames(*cumsum),
            (std::vector<std::string>{"cumsum", "cumsum.out", "cumsum_"}));

  const Operator* abs = backend->findRegistration("abs.out");
  ASSERT_NE(abs, nullptr);
  EXPECT_EQ(abs->stub, "abs_stub");
  EXPECT_EQ(memberNames(*abs), (std::vector<std::string>{"abs.out"}));

  for (const auto& op : backend->operators()) {
    if (op.kind == spec::OpKind::kBuiltin) {
      EXPECT_EQ(op.members.size(), 1u) << op.full_name;
    }
    EXPECT_EQ(std::count_if(op.members.begin(), op.members.end(),
                            [](const Registration& r) { return r.primary; }),
              1)
        << op.full_name;
  }
}

TEST_F(RealTorch, NamesAndSignatures) {
  DiagnosticEngine diags;
  auto backend = build(specs(kBaseOperators), diags);
  ASSERT_TRUE(backend) << printed(diags);

  const Operator* mul = backend->findRegistration("mul.Tensor");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->kernel_name, "kernel_mul_Tensor");
  EXPECT_EQ(mul->kernel_file, "kernels/mul_Tensor.cpp");
  EXPECT_EQ(mul->member("mul_.Tensor")->wrapper_name, "wrapper_mul__Tensor");
  EXPECT_EQ(mul->member("mul.out")->wrapper_name, "wrapper_mul_out");

  const Operator* mm = backend->findRegistration("mm");
  EXPECT_EQ(mm->function().schema.fullName(), "mm");
  EXPECT_EQ(&mm->signature(), &mm->primary().signature);
  const Registration& r = mm->primary();
  EXPECT_EQ(r.wrapper_name, "wrapper_mm");
  EXPECT_EQ(r.signature.decl(r.wrapper_name),
            "at::Tensor wrapper_mm(const at::Tensor& self, const at::Tensor& "
            "mat2)");
  EXPECT_EQ(mm->kernel_file, "kernels/mm.cpp");

  // Only kernel kinds have user kernels.
  EXPECT_EQ(backend->findRegistration("add.Tensor")->kernel_name, "");
  EXPECT_EQ(backend->findRegistration("add.Tensor")->kernel_file, "");

  const Registration& out = *mul->member("mul.out");
  EXPECT_EQ(out.signature.returns.text, "at::Tensor&");
  EXPECT_TRUE(out.signature.arguments.back().type.isMutableRef());
  EXPECT_EQ(out.signature.arguments.back().name, "out");
}

// The signature options of an entry (structured: ITensorListRef; resize_
// and friends: const references to written tensors) reach the wrappers:
// c10 refuses a kernel whose C++ type differs from ATen's declaration.
TEST_F(RealTorch, KernelSignaturesKeepTheEntryOptions) {
  DiagnosticEngine diags;
  auto backend = build(specs(std::string("operators:\n") + kBuiltins +
                             "  - {op: cat, kind: kernel}\n"
                             "  - {op: resize_as_, kind: kernel}\n"),
                       diags);
  ASSERT_TRUE(backend) << printed(diags);
  const Operator* cat = backend->findRegistration("cat");
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->signature().decl("kernel_cat"),
            "at::Tensor kernel_cat(const at::ITensorListRef& tensors, "
            "int64_t dim)");
  ASSERT_NE(cat->member("cat.out"), nullptr);
  EXPECT_EQ(cat->member("cat.out")->signature.paramTypes(),
            "const at::ITensorListRef&, int64_t, at::Tensor&");
  const Operator* resize_as = backend->findRegistration("resize_as_");
  ASSERT_NE(resize_as, nullptr);
  EXPECT_EQ(resize_as->signature().returns.text, "const at::Tensor&");
  EXPECT_EQ(resize_as->signature().arguments.front().type.text,
            "const at::Tensor&");
  // The model's mapping for a function is registrationOf's.
  const schema::NativeFunction* fn = registry_->find("cat");
  ASSERT_NE(fn, nullptr);
  Registration r = registrationOf(registry_->shared(*fn), /*primary=*/true);
  EXPECT_EQ(r.signature.functionType(), cat->signature().functionType());
  EXPECT_EQ(r.role, schema::SchemaKind::kFunctional);
}

TEST_F(RealTorch, BackendValuesAndCustomOperators) {
  DiagnosticEngine diags;
  auto backend = build(
      specs(kBaseOperators, "device: accel\nnamespace: vendor\ndevices: 3\n"),
      diags);
  ASSERT_TRUE(backend) << printed(diags);
  EXPECT_EQ(backend->device(), "accel");
  EXPECT_EQ(backend->package(), "torch_accel");
  EXPECT_EQ(backend->cppNamespace(), "vendor");
  EXPECT_EQ(backend->deviceCount(), 3);
  EXPECT_EQ(backend->specDir(), "specs");

  ASSERT_EQ(backend->customOperators().size(), 1u);
  const CustomOperator& c = backend->customOperators()[0];
  EXPECT_EQ(c.full_name, "scaled_add");
  EXPECT_EQ(c.ns, "vendor");
  EXPECT_EQ(c.qualified_name, "vendor::scaled_add");
  EXPECT_TRUE(c.meta);
  EXPECT_TRUE(c.autograd);
  EXPECT_EQ(c.kernel_name, "kernel_scaled_add");
  EXPECT_EQ(c.meta_name, "meta_scaled_add");
  EXPECT_EQ(c.backward_name, "backward_scaled_add");
  EXPECT_EQ(c.kernel_file, "kernels/scaled_add.cpp");
  EXPECT_EQ(c.signature.decl("f"),
            "at::Tensor f(const at::Tensor& self, const at::Tensor& other, "
            "double alpha)");
  EXPECT_EQ(backend->findCustom("vendor::scaled_add"), &c);
  EXPECT_EQ(backend->findCustom("scaled_add"), &c);
  EXPECT_EQ(backend->findCustom("accel::scaled_add"), nullptr);
  EXPECT_EQ(backend->findRegistration("scaled_add"), nullptr);
}

TEST_F(RealTorch, TheBackendOutlivesTheRegistryAndItsCopies) {
  std::optional<Backend> copy;
  {
    auto registry = std::make_unique<schema::SchemaRegistry>(
        schema::SchemaRegistry::load(torch_->native_functions_yaml));
    DiagnosticEngine diags;
    BuildOptions options;
    options.dispatch_stubs = *stubs_;
    auto backend =
        buildBackend(specs(kBaseOperators), *registry, diags, options);
    ASSERT_TRUE(backend) << printed(diags);
    copy = *backend;
  }
  // Signatures point into the functions the Backend shares, so they stay
  // valid after the registry and the original are gone.
  const Operator* add = copy->findRegistration("add_.Tensor");
  ASSERT_NE(add, nullptr);
  const Registration& inplace = *add->member("add_.Tensor");
  ASSERT_EQ(inplace.signature.arguments.size(), 3u);
  EXPECT_EQ(inplace.signature.arguments[2].argument->name, "alpha");
  EXPECT_EQ(inplace.signature.arguments[2].argument,
            &inplace.schema().arguments[2]);
  const CustomOperator& c = copy->customOperators()[0];
  EXPECT_EQ(c.signature.arguments[0].argument, &c.schema->arguments[0]);
}

TEST_F(RealTorch, TwoGroupsClaimingOneSiblingIsAnError) {
  DiagnosticEngine diags;
  EXPECT_FALSE(build(specs(std::string("operators:\n") + kBuiltins +
                           "  - {op: add.Tensor, kind: kernel}\n"
                           "  - {op: add.out, kind: kernel}\n"),
                     diags));
  ASSERT_EQ(diags.errorCount(), 1) << printed(diags);
  EXPECT_EQ(diags.diagnostics()[0].message,
            "operator 'add_.Tensor' is in the groups of both 'add.Tensor' and "
            "'add.out'");
  EXPECT_EQ(diags.diagnostics()[0].loc.line, 16);
}

TEST_F(RealTorch, AnExplicitEntryOfTheSameKindLeavesTheGroup) {
  DiagnosticEngine diags;
  auto backend = build(specs(std::string("operators:\n") + kBuiltins +
                             "  - {op: add.Tensor, kind: kernel}\n"
                             "  - {op: add.out, kind: kernel, group: false}\n"),
                       diags);
  ASSERT_TRUE(backend) << printed(diags);
  const Operator* functional = backend->findRegistration("add.Tensor");
  const Operator* out = backend->findRegistration("add.out");
  ASSERT_NE(functional, nullptr);
  ASSERT_NE(out, nullptr);
  EXPECT_NE(functional, out);
  EXPECT_EQ(memberNames(*functional),
            (std::vector<std::string>{"add.Tensor", "add_.Tensor"}));
  EXPECT_EQ(memberNames(*out), (std::vector<std::string>{"add.out"}));
  EXPECT_EQ(out->kernel_file, "kernels/add_out.cpp");
  EXPECT_EQ(backend->findRegistration("add_.Tensor"), functional);
}

TEST_F(RealTorch, GroupsOfDifferentKindsThatOverlapAreOneError) {
  DiagnosticEngine diags;
  EXPECT_FALSE(build(specs(std::string("operators:\n") + kBuiltins +
                           "  - {op: add.Tensor, kind: emulate}\n"
                           "  - {op: add.out, kind: kernel}\n"),
                     diags));
  ASSERT_EQ(diags.errorCount(), 1) << printed(diags);
  const Diagnostic& d = diags.diagnostics()[0];
  EXPECT_EQ(d.loc.str(), "specs/operators.yaml:16:10");
  EXPECT_EQ(d.message,
            "operator 'add.out' is listed as kernel, but the group of "
            "'add.Tensor' registers it as emulate");
  ASSERT_EQ(d.notes.size(), 3u);
  EXPECT_EQ(d.notes[0], "'add.Tensor' is listed at specs/operators.yaml:15:5");
}

TEST_F(RealTorch, GroupSkipsSiblingsThatCannotHaveAKernel) {
  // sum's out and functional forms have kernels; its in-place form does not
  // exist. The group holds exactly the siblings that exist.
  DiagnosticEngine diags;
  auto backend = build(specs(std::string("operators:\n") + kBuiltins +
                             "  - {op: sum.dim_IntList, kind: emulate}\n"),
                       diags);
  ASSERT_TRUE(backend) << printed(diags);
  const Operator* sum = backend->findRegistration("sum.dim_IntList");
  ASSERT_NE(sum, nullptr);
  for (const auto& m : sum->members) {
    EXPECT_TRUE(m.function->canHaveBackendKernel()) << m.fullName();
    EXPECT_TRUE(registry_->hasCpuKernel(*m.function)) << m.fullName();
  }
  EXPECT_EQ(memberNames(*sum),
            (std::vector<std::string>{"sum.IntList_out", "sum.dim_IntList"}));
}

TEST_F(RealTorch, KindRules) {
  struct Case {
    const char* entry;
    const char* message;
  };
  const Case cases[] = {
      {"{op: matmul, kind: emulate}",
       "operator 'matmul' cannot be emulate: it is CompositeImplicitAutograd"},
      {"{op: linear, kind: fallback}",
       "operator 'linear' cannot be fallback: it is "
       "CompositeImplicitAutograd"},
      {"{op: mm, kind: builtin}", "operator 'mm' cannot be builtin"},
      {"{op: _fused_dropout, kind: emulate}",
       "operator '_fused_dropout' cannot be emulate: it has no CPU kernel"},
      {"{op: _fused_dropout, kind: fallback}",
       "operator '_fused_dropout' cannot be fallback: it has no CPU kernel"},
      {"{op: abs.out, kind: stub, stub: abs_stb}",
       "unknown DispatchStub 'abs_stb'; did you mean 'abs_stub'?"},
      {"{op: mm.out, kind: stub}",
       "unknown DispatchStub 'mm_stub' (the default for 'mm.out')"},
      {"{op: ad.Tensor, kind: kernel}",
       "unknown operator 'ad.Tensor'; did you mean 'add.Tensor'?"},
      {"{op: sub, kind: kernel}",
       "ambiguous operator 'sub': 'sub' has no overload without a name"},
      // What the emitters could not write is refused here too, so that
      // `accgen validate` and `accgen generate` agree.
      {"{op: mm.out, kind: stub, stub: abs_stub}",
       "operator 'mm.out' cannot be registered as a stub: it is structured "
       "without a TensorIterator"},
      {"{op: _native_batch_norm_legit, kind: kernel}",
       "cannot derive '_native_batch_norm_legit.out' from the kernel of "
       "'_native_batch_norm_legit'"},
  };
  for (const auto& c : cases) {
    DiagnosticEngine diags;
    EXPECT_FALSE(build(specs(std::string("operators:\n") + kBuiltins + "  - " +
                             c.entry + "\n"),
                       diags))
        << c.entry;
    ASSERT_EQ(diags.errorCount(), 1) << c.entry << "\n" << printed(diags);
    EXPECT_EQ(diags.diagnostics()[0].message, c.message) << c.entry;
    EXPECT_EQ(diags.diagnostics()[0].loc.line, 15) << c.entry;
  }
}

TEST_F(RealTorch, ADefaultStubThatExistsIsAccepted) {
  DiagnosticEngine diags;
  auto backend = build(specs(std::string("operators:\n") + kBuiltins +
                             "  - {op: sin.out, kind: stub}\n"),
                       diags);
  ASSERT_TRUE(backend) << printed(diags);
  EXPECT_EQ(backend->findRegistration("sin.out")->stub, "sin_stub");
  // The at::native function the registration routes to.
  EXPECT_EQ(backend->findRegistration("sin.out")->stub_native, "sin_out");
}

TEST_F(RealTorch, StubsAreScannedFromTheIncludeDirectory) {
  spec::Specs s = specs(std::string("operators:\n") + kBuiltins +
                        "  - {op: abs.out, kind: stub}\n"
                        "  - {op: neg.out, kind: stub, stub: neg_stubb}\n");
  DiagnosticEngine diags;
  BuildOptions options;
  options.torch_include_dir = torch_->include_dir;
  EXPECT_FALSE(buildBackend(s, *registry_, diags, options));
  ASSERT_EQ(diags.errorCount(), 1) << printed(diags);
  EXPECT_EQ(diags.diagnostics()[0].message,
            "unknown DispatchStub 'neg_stubb'; did you mean 'neg_stub'?");
}

TEST_F(RealTorch, WithoutAnIncludeDirectoryStubsAreNotChecked) {
  spec::Specs s = specs(std::string("operators:\n") + kBuiltins +
                        "  - {op: abs.out, kind: stub, stub: no_such_stub}\n"
                        "  - {op: neg.out, kind: stub, stub: neg_stub}\n");
  DiagnosticEngine diags;
  auto backend = buildBackend(s, *registry_, diags);
  ASSERT_TRUE(backend) << printed(diags);
  ASSERT_EQ(diags.diagnostics().size(), 1u);
  EXPECT_EQ(diags.diagnostics()[0].format(),
            "specs/operators.yaml:15:5: warning: DispatchStub names are not "
            "checked: no torch include directory was given\n");
}

TEST_F(RealTorch, IncompleteBuiltinSetListsWhatIsMissing) {
  DiagnosticEngine diags;
  EXPECT_FALSE(build(specs("operators:\n"
                           "  - {op: view, kind: builtin}\n"
                           "  - {op: as_strided, kind: emulate}\n"),
                     diags));
  ASSERT_EQ(diags.errorCount(), 2) << printed(diags);
  EXPECT_EQ(diags.diagnostics()[0].message,
            "operator 'as_strided' must be builtin, not emulate");
  // as_strided was reported already, so the list leaves it out.
  EXPECT_EQ(diags.diagnostics()[1].message,
            "the builtin operator set is incomplete: missing _copy_from, "
            "_copy_from_and_resize, _local_scalar_dense, _reshape_alias, "
            "empty.memory_format, empty_strided, resize_, set_, "
            "set_.source_Storage, set_.source_Storage_storage_offset, "
            "set_.source_Tensor");
  EXPECT_EQ(diags.diagnostics()[1].loc.str(), "specs/operators.yaml:1:1");
}

TEST_F(RealTorch, CustomOperatorRules) {
  struct Case {
    const char* schema;
    const char* extra;
    const char* message;
    int column;
  };
  const Case cases[] = {
      {"f(Tensor self, Tensor other -> Tensor", "",
       "invalid operator schema: expected ',' or ')' after an argument", 42},
      {"mm(Tensor self, Tensor mat2) -> Tensor", "",
       "custom operator 'mm' has the name of an aten operator", 14},
      {"f(int x) -> int", "", "custom operator 'f' has no Tensor argument", 14},
      {"f_(Tensor(a!) self) -> Tensor(a!)", "    autograd: true\n",
       "custom operator 'f_' cannot have autograd: it writes to its "
       "arguments",
       5},
      {"f(Tensor self) -> ()", "    autograd: true\n",
       "custom operator 'f' cannot have autograd: it returns no Tensor", 5},
      {"f(Tensor self) -> (Tensor, int)", "    autograd: true\n",
       "custom operator 'f' cannot have autograd: it returns a value that is "
       "not a Tensor",
       5},
  };
  for (const auto& c : cases) {
    DiagnosticEngine diags;
    EXPECT_FALSE(
        build(specs(std::string("operators:\n") + kBuiltins +
                    "custom:\n  - schema: \"" + c.schema + "\"\n" + c.extra),
              diags))
        << c.schema;
    ASSERT_EQ(diags.errorCount(), 1) << c.schema << "\n" << printed(diags);
    EXPECT_EQ(diags.diagnostics()[0].message, c.message) << c.schema;
    EXPECT_EQ(diags.diagnostics()[0].loc.line, 16) << c.schema;
    EXPECT_EQ(diags.diagnostics()[0].loc.column, c.column) << c.schema;
  }
}

TEST(KindTraits, EveryKindHasOneRowInEnumOrder) {
  const auto& table = spec::kindTraitsTable();
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(table[i].kind), i);
    EXPECT_EQ(&spec::kindTraits(table[i].kind), &table[i]);
    EXPECT_FALSE(table[i].name.empty());
    EXPECT_FALSE(table[i].emitter.empty()) << table[i].name;
  }
  EXPECT_EQ(spec::kindName(spec::OpKind::kCustom), "custom");
  EXPECT_FALSE(spec::kindTraits(spec::OpKind::kCustom).listed);
  EXPECT_TRUE(spec::kindAllowsGroup(spec::OpKind::kFallback));
  EXPECT_FALSE(spec::kindAllowsGroup(spec::OpKind::kStub));
  try {
    spec::kindTraits(static_cast<spec::OpKind>(table.size()));
    FAIL() << "expected an internal error";
  } catch (const AccgenError& e) {
    EXPECT_EQ(e.code(), ExitCode::kInternal);
  }
}

TEST(Derivation, WhatAKernelGroupCanDerive) {
  using K = schema::SchemaKind;
  EXPECT_EQ(derivationOf(K::kOut, 1, K::kFunctional, 0),
            Derivation::kFunctionalFromOut);
  EXPECT_EQ(derivationOf(K::kOut, 1, K::kInplace, 0),
            Derivation::kInplaceFromOut);
  EXPECT_EQ(derivationOf(K::kOut, 2, K::kInplace, 0), std::nullopt);
  EXPECT_EQ(derivationOf(K::kInplace, 0, K::kOut, 1),
            Derivation::kOutFromInplace);
  EXPECT_EQ(derivationOf(K::kInplace, 0, K::kOut, 2), std::nullopt);
  EXPECT_EQ(derivationOf(K::kFunctional, 0, K::kInplace, 0),
            Derivation::kInplaceFromFunctional);
  EXPECT_EQ(derivationOf(K::kMutable, 0, K::kFunctional, 0), std::nullopt);
  EXPECT_EQ(derivationOf(K::kFunctional, 0, K::kMutable, 0), std::nullopt);
}

TEST_F(RealTorch, BadSchemaNotePointsAtTheColumn) {
  DiagnosticEngine diags;
  EXPECT_FALSE(build(specs(std::string("operators:\n") + kBuiltins +
                           "custom:\n  - schema: \"f(Tensor x) => Tensor\"\n"),
                     diags));
  ASSERT_EQ(diags.errorCount(), 1);
  const Diagnostic& d = diags.diagnostics()[0];
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_EQ(d.notes[0], "f(Tensor x) => Tensor");
  EXPECT_EQ(d.notes[1], "            ^");
  // The column in the message is the file column of the same character.
  EXPECT_EQ(d.loc.column, 14 + 12);
}

TEST_F(RealTorch, DuplicateCustomOperators) {
  DiagnosticEngine diags;
  EXPECT_FALSE(build(specs(std::string("operators:\n") + kBuiltins +
                           "custom:\n"
                           "  - schema: \"f(Tensor x) -> Tensor\"\n"
                           "  - schema: \"f(Tensor y) -> Tensor\"\n"
                           "  - schema: \"f.two(Tensor y) -> Tensor\"\n"),
                     diags));
  ASSERT_EQ(diags.errorCount(), 1) << printed(diags);
  EXPECT_EQ(diags.diagnostics()[0].message, "duplicate custom operator 'f'");
}

TEST_F(RealTorch, AutocastRulesResolve) {
  DiagnosticEngine diags;
  auto backend = build(specs(kBaseOperators, "device: accel\n",
                             "dtype: bfloat16\n"
                             "policies:\n"
                             "  promote: [stack, cat]\n"
                             "  fp32_set_opt_dtype: [softmax.int]\n"
                             "  lower_precision_fp: [mm]\n"),
                       diags);
  ASSERT_TRUE(backend) << printed(diags);
  EXPECT_EQ(backend->autocastDtype(), spec::AutocastDtype::kBFloat16);
  std::vector<std::string> names;
  for (const auto& r : backend->autocastRules())
    names.push_back(r.full_name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"cat", "mm", "softmax.int", "stack"}));
  const AutocastRule& mm = backend->autocastRules()[1];
  EXPECT_EQ(mm.policy, spec::CastPolicy::kLowerPrecisionFp);
  EXPECT_EQ(mm.signature.decl("f"),
            "at::Tensor f(const at::Tensor& self, const at::Tensor& mat2)");
  EXPECT_EQ(mm.signature.arguments[0].argument,
            &mm.function->schema.arguments[0]);
}

TEST_F(RealTorch, AutocastErrors) {
  DiagnosticEngine diags;
  EXPECT_FALSE(build(specs(kBaseOperators, "device: accel\n",
                           "policies:\n"
                           "  fp32: [softmax, sofmax.int, log_softmax.int]\n"
                           "  fp32_set_opt_dtype: [mm]\n"),
                     diags));
  ASSERT_EQ(diags.errorCount(), 3) << printed(diags);
  EXPECT_EQ(diags.diagnostics()[0].message,
            "ambiguous operator 'softmax' in autocast.yaml: 'softmax' has no "
            "overload without a name");
  EXPECT_EQ(diags.diagnostics()[0].notes[0],
            "its overloads: softmax.int, softmax.int_out");
  EXPECT_EQ(diags.diagnostics()[1].message,
            "unknown operator 'sofmax.int' in autocast.yaml; did you mean "
            "'softmax.int'?");
  EXPECT_EQ(diags.diagnostics()[2].message,
            "operator 'mm' cannot be fp32_set_opt_dtype: it has no "
            "'ScalarType? dtype' argument");
}

TEST_F(RealTorch, AutocastOffDropsTheRulesWithAWarning) {
  DiagnosticEngine diags;
  auto backend = build(
      specs(kBaseOperators, "device: accel\nfeatures: {autocast: false}\n",
            "policies:\n  fp32: [mm]\n"),
      diags);
  ASSERT_TRUE(backend) << printed(diags);
  EXPECT_TRUE(backend->autocastRules().empty());
  ASSERT_EQ(diags.diagnostics().size(), 1u);
  EXPECT_EQ(diags.diagnostics()[0].severity, Severity::kWarning);
}

TEST_F(RealTorch, DeviceNamedAfterAnOperator) {
  DiagnosticEngine diags;
  EXPECT_FALSE(build(specs(kBaseOperators, "device: relu\n"), diags));
  ASSERT_EQ(diags.errorCount(), 1);
  EXPECT_EQ(diags.diagnostics()[0].loc.str(), "specs/backend.yaml:1:9");
  EXPECT_EQ(diags.diagnostics()[0].message,
            "invalid device name 'relu': torch.relu is an operator and the "
            "device module is registered as torch.<device>");
}

TEST_F(RealTorch, EveryBuiltinExistsInTheInstalledTorch) {
  for (const auto& name : builtinOperators()) {
    const schema::NativeFunction* fn = registry_->find(name);
    ASSERT_NE(fn, nullptr) << name;
    EXPECT_FALSE(fn->hasCompositeImplicitAutograd()) << name;
  }
}

}  // namespace
}  // namespace accgen::model
