// checkKernelSource on C++ as people write it: spellings of the same types
// that must match, changes that must not, and where the report points.
#include <gtest/gtest.h>

#include "generator/schema/schema.h"
#include "generator/upgrade/user_kernels.h"

namespace accgen::upgrade {
namespace {

class KernelSourceTest : public ::testing::Test {
 protected:
  /// add.out's dispatcher signature: (const at::Tensor&, const at::Tensor&,
  /// const at::Scalar&, at::Tensor&).
  KernelSourceTest()
      : schema_(schema::parseFunctionSchema(
            "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) "
            "out) -> Tensor(a!)")),
        sig_(schema::dispatcherSignature(schema_, {})) {}

  std::vector<Diagnostic> check(const std::string& source) {
    return checkKernelSource(source, "kernels/add.cpp", "kernel_add_out", sig_,
                             "aten::add.out");
  }

  schema::FunctionSchema schema_;
  schema::CppSignature sig_;
};

TEST_F(KernelSourceTest, EquivalentSpellingsMatch) {
  EXPECT_TRUE(check("at::Tensor& kernel_add_out(const at::Tensor& self, const "
                    "at::Tensor& other, const at::Scalar& alpha, at::Tensor& "
                    "out) { return out; }")
                  .empty());
  // Line breaks, east const, c10:: and unqualified names, no parameter
  // names, a namespace-qualified definition, comments in between.
  EXPECT_TRUE(check("#include <ATen/ATen.h>\n"
                    "using namespace at;\n"
                    "Tensor &\n"
                    "accel::kernels::kernel_add_out(\n"
                    "    Tensor const &self,  // the input\n"
                    "    const c10::Tensor& /*other*/,\n"
                    "    const Scalar&,\n"
                    "    ::at::Tensor& out) noexcept {\n"
                    "  return out;\n"
                    "}\n")
                  .empty());
}

TEST_F(KernelSourceTest, ChangedParameterTypesAreReportedAtTheDefinition) {
  auto d = check(
      "// kernels/add.cpp\n"
      "#include \"KernelDecls.h\"\n"
      "namespace accel::kernels {\n"
      "\n"
      "  at::Tensor& kernel_add_out(const at::Tensor& self,\n"
      "                             const at::Tensor& other,\n"
      "                             double alpha, at::Tensor& out) {\n"
      "    return out;\n"
      "  }\n"
      "}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_EQ(d[0].loc.str(), "kernels/add.cpp:5:3");
  EXPECT_EQ(d[0].message,
            "kernel 'kernel_add_out' no longer matches aten::add.out; the "
            "signature is now: at::Tensor& kernel_add_out(const at::Tensor& "
            "self, const at::Tensor& other, const at::Scalar& alpha, "
            "at::Tensor& out)");
  EXPECT_EQ(d[0].notes[0],
            "this definition takes (const at::Tensor& self, const at::Tensor& "
            "other, double alpha, at::Tensor& out)");
}

TEST_F(KernelSourceTest, MissingOrExtraParametersAndConstnessCount) {
  EXPECT_EQ(check("at::Tensor& kernel_add_out(const at::Tensor& self, const "
                  "at::Tensor& other, at::Tensor& out) { return out; }")
                .size(),
            1u);
  // `const at::Tensor& out` is another type than the written `at::Tensor&`.
  EXPECT_EQ(check("at::Tensor& kernel_add_out(const at::Tensor& self, const "
                  "at::Tensor& other, const at::Scalar& alpha, const "
                  "at::Tensor& out) { return out; }")
                .size(),
            1u);
}

TEST_F(KernelSourceTest, DeclarationsCallsAndCommentsAreNotDefinitions) {
  auto d = check(
      "at::Tensor& kernel_add_out(const at::Tensor& self, const at::Tensor& "
      "other, const at::Scalar& alpha, at::Tensor& out);\n"
      "// at::Tensor& kernel_add_out(const at::Tensor& self, const "
      "at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {}\n"
      "const char* s = \"kernel_add_out(const at::Tensor& self) {\";\n"
      "void g() { kernel_add_out(a, b, c, d); }\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].loc.str(), "kernels/add.cpp");
  EXPECT_EQ(d[0].message.rfind("no definition of kernel 'kernel_add_out' for "
                               "aten::add.out found; the signature is now: ",
                               0),
            0u);
}

TEST_F(KernelSourceTest, AnyMatchingOverloadIsEnough) {
  EXPECT_TRUE(check("at::Tensor& kernel_add_out(const at::Tensor& self) { "
                    "return const_cast<at::Tensor&>(self); }\n"
                    "at::Tensor& kernel_add_out(const at::Tensor& self, const "
                    "at::Tensor& other, const at::Scalar& alpha, at::Tensor& "
                    "out) { return out; }\n")
                  .empty());
}

TEST_F(KernelSourceTest, TemplateArgumentsWithCommasStayOneParameter) {
  auto s = schema::parseFunctionSchema(
      "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
      "Tensor indices)");
  auto sig = schema::dispatcherSignature(s, {});
  EXPECT_TRUE(checkKernelSource(
                  "std::tuple<at::Tensor, at::Tensor> kernel_max_dim(const "
                  "at::Tensor& self, int64_t dim, bool keepdim) { return {}; }",
                  "k.cpp", "kernel_max_dim", sig, "aten::max.dim")
                  .empty());
  auto opt = schema::parseFunctionSchema(
      "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
      "ScalarType? dtype=None) -> Tensor");
  auto opt_sig = schema::dispatcherSignature(opt, {});
  EXPECT_TRUE(
      checkKernelSource("at::Tensor kernel_sum(const at::Tensor& self, "
                        "at::OptionalIntArrayRef dim, bool keepdim, "
                        "std::optional<at::ScalarType> dtype) { return self; }",
                        "k.cpp", "kernel_sum", opt_sig, "aten::sum.dim_IntList")
          .empty())
      << opt_sig.paramTypes();
}

TEST(DisplayPath, JoinsTheOutputDirectory) {
  EXPECT_EQ(displayPath("", "kernels/a.cpp"), "kernels/a.cpp");
  EXPECT_EQ(displayPath(".", "kernels/a.cpp"), "kernels/a.cpp");
  EXPECT_EQ(displayPath("gen", "kernels/a.cpp"), "gen/kernels/a.cpp");
  EXPECT_EQ(displayPath("gen/", "kernels/a.cpp"), "gen/kernels/a.cpp");
}

}  // namespace
}  // namespace accgen::upgrade
