// Backend model tests against a small hand-written native_functions.yaml, for
// situations the installed torch does not offer on demand: wrapper names that
// collide after sanitizing, manual kernel registration, group siblings
// without a CPU kernel, and a torch that lacks part of the builtin set.
#include <gtest/gtest.h>

#include <sstream>

#include "generator/model/backend.h"
#include "generator/schema/schema.h"
#include "generator/spec/spec.h"
#include "tests/generator/test_support.h"

namespace accgen::model {
namespace {

const char* const kNativeFunctions = R"yaml(
- func: empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
  dispatch:
    CPU: empty_cpu

- func: view(Tensor(a) self, SymInt[] size) -> Tensor(a)
  dispatch:
    CPU, Meta: view

- func: relu(Tensor self) -> Tensor
  dispatch:
    CPU: relu

- func: relu_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: relu_

- func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CUDA: relu_out_cuda

- func: decomposed(Tensor self) -> Tensor

- func: handmade(Tensor self) -> Tensor
  manual_kernel_registration: True
  dispatch:
    CPU: handmade

- func: foo_.bar(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: foo_bar_

- func: foo._bar(Tensor self, int x) -> Tensor
  dispatch:
    CPU: foo_underscore_bar
)yaml";

class Fixture : public ::testing::Test {
 protected:
  Fixture()
      : registry_(schema::SchemaRegistry::loadFromString(
            kNativeFunctions, "native_functions.yaml")) {}

  std::optional<Backend> build(const std::string& entries,
                               DiagnosticEngine& diags) {
    spec::Specs specs;
    specs.dir = "specs";
    auto backend =
        spec::parseBackendSpec("device: npu\n", "specs/backend.yaml", diags);
    auto ops = spec::parseOperatorsSpec(
        "operators:\n"
        "  - {op: empty.memory_format, kind: builtin}\n"
        "  - {op: view, kind: builtin}\n" +
            entries,
        "specs/operators.yaml", diags);
    if (!backend || !ops) return std::nullopt;
    specs.backend = *backend;
    specs.operators = *ops;
    BuildOptions options;
    options.dispatch_stubs =
        schema::DispatchStubs{{"relu_stub", "ATen/native/Activation.h"}};
    return buildBackend(specs, registry_, diags, options);
  }

  schema::SchemaRegistry registry_;
};

TEST_F(Fixture, BuiltinsTheTorchLacksAreNotRequired) {
  DiagnosticEngine diags;
  auto backend = build("", diags);
  ASSERT_TRUE(backend) << printed(diags);
  EXPECT_EQ(backend->operators().size(), 2u);
}

TEST_F(Fixture, BuiltinsTheTorchHasAreRequired) {
  DiagnosticEngine diags;
  spec::Specs specs;
  specs.backend.device = "npu";
  specs.backend.cpp_namespace = "npu";
  specs.operators.loc = SourceLoc{"specs/operators.yaml"};
  EXPECT_FALSE(buildBackend(specs, registry_, diags));
  ASSERT_EQ(diags.errorCount(), 1);
  EXPECT_EQ(diags.diagnostics()[0].format(),
            "specs/operators.yaml: error: the builtin operator set is "
            "incomplete: missing empty.memory_format, view\n"
            "note: a backend cannot allocate, copy or view tensors without "
            "them\n"
            "note: add each as: - {op: empty.memory_format, kind: builtin}\n");
}

TEST_F(Fixture, EmulateGroupLeavesOutSiblingsWithoutACpuKernel) {
  DiagnosticEngine diags;
  auto backend = build("  - {op: relu, kind: emulate}\n", diags);
  ASSERT_TRUE(backend) << printed(diags);
  const Operator* relu = backend->findRegistration("relu");
  ASSERT_NE(relu, nullptr);
  ASSERT_EQ(relu->members.size(), 2u);
  EXPECT_EQ(relu->members[0].fullName(), "relu");
  EXPECT_EQ(relu->members[1].fullName(), "relu_");
  EXPECT_EQ(backend->findRegistration("relu.out"), nullptr);
}

TEST_F(Fixture, KernelGroupTakesEverySiblingThatAcceptsAKernel) {
  DiagnosticEngine diags;
  auto backend = build("  - {op: relu_, kind: kernel}\n", diags);
  ASSERT_TRUE(backend) << printed(diags);
  const Operator* relu = backend->findRegistration("relu.out");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->full_name, "relu_");
  EXPECT_EQ(relu->members.size(), 3u);
  EXPECT_EQ(relu->primary().fullName(), "relu_");
  EXPECT_EQ(relu->kernel_name, "kernel_relu_");
  EXPECT_EQ(relu->kernel_file, "kernels/relu_.cpp");
}

TEST_F(Fixture, ManualKernelRegistrationAndComposites) {
  DiagnosticEngine diags;
  EXPECT_FALSE(
      build("  - {op: handmade, kind: kernel}\n"
            "  - {op: decomposed, kind: emulate}\n",
            diags));
  EXPECT_EQ(printed(diags),
            "specs/operators.yaml:4:26: error: operator 'handmade' cannot be "
            "kernel: PyTorch registers its kernels by hand "
            "(manual_kernel_registration)\n"
            "specs/operators.yaml:5:28: error: operator 'decomposed' cannot "
            "be emulate: it is CompositeImplicitAutograd\n"
            "note: it decomposes into other operators; register those "
            "instead\n");
}

TEST_F(Fixture, WrapperNamesStayUniqueAfterSanitizing) {
  // foo_.bar and foo._bar both sanitize to foo__bar.
  DiagnosticEngine diags;
  auto backend = build(
      "  - {op: foo_.bar, kind: emulate, group: false}\n"
      "  - {op: foo._bar, kind: emulate, group: false}\n",
      diags);
  ASSERT_TRUE(backend) << printed(diags);
  // Sorted by (name, overload): foo._bar before foo_.bar.
  EXPECT_EQ(backend->findRegistration("foo._bar")->primary().wrapper_name,
            "wrapper_foo__bar");
  EXPECT_EQ(backend->findRegistration("foo_.bar")->primary().wrapper_name,
            "wrapper_foo__bar_2");
}

TEST_F(Fixture, UserKernelFilesMustNotCollide) {
  DiagnosticEngine diags;
  EXPECT_FALSE(
      build("  - {op: foo_.bar, kind: kernel, group: false}\n"
            "  - {op: foo._bar, kind: kernel, group: false}\n",
            diags));
  ASSERT_EQ(diags.errorCount(), 1) << printed(diags);
  EXPECT_EQ(diags.diagnostics()[0].message,
            "'foo_.bar' and 'foo._bar' would share the user kernel file "
            "kernels/foo__bar.cpp");
}

TEST_F(Fixture, StubNameDefaultsToTheBaseName) {
  DiagnosticEngine diags;
  auto backend = build("  - {op: relu_, kind: stub}\n", diags);
  ASSERT_TRUE(backend) << printed(diags);
  EXPECT_EQ(backend->findRegistration("relu_")->stub, "relu_stub");
}

}  // namespace
}  // namespace accgen::model
