// Tests of the schema-to-C++ mapping of the dispatcher API: one row per type
// form (arguments and returns), whole signatures, the per-entry options and
// the types that have no C++ form. The rows are what libtorch's own
// ATen/ops/*_ops.h declare; tests/schema_compile proves the mapping for
// every operator by compiling it against them.
#include <gtest/gtest.h>

#include "generator/schema/schema.h"

namespace accgen::schema {
namespace {

struct MapCase {
  const char* schema_type;
  const char* cpp;
};

class ArgumentMappingTest : public ::testing::TestWithParam<MapCase> {};

TEST_P(ArgumentMappingTest, MapsToDispatcherType) {
  EXPECT_EQ(argumentCppType(parseType(GetParam().schema_type)).text,
            GetParam().cpp);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, ArgumentMappingTest,
    ::testing::Values(
        MapCase{"Tensor", "const at::Tensor&"},
        MapCase{"Tensor(a)", "const at::Tensor&"},
        MapCase{"Tensor(a!)", "at::Tensor&"},
        MapCase{"Tensor(a -> *)", "const at::Tensor&"},
        MapCase{"Tensor?", "const ::std::optional<at::Tensor>&"},
        MapCase{"Tensor(a!)?", "::std::optional<at::Tensor>&"},
        MapCase{"Tensor[]", "at::TensorList"},
        MapCase{"Tensor(a)[]", "at::TensorList"},
        MapCase{"Tensor(a!)[]", "at::TensorList"},
        MapCase{"Tensor?[]", "const c10::List<::std::optional<at::Tensor>>&"},
        MapCase{"int", "int64_t"}, MapCase{"int?", "::std::optional<int64_t>"},
        MapCase{"int[]", "at::IntArrayRef"},
        MapCase{"int[2]", "at::IntArrayRef"},
        MapCase{"int[1]?", "at::OptionalIntArrayRef"},
        MapCase{"int[]?", "at::OptionalIntArrayRef"},
        MapCase{"SymInt", "c10::SymInt"},
        MapCase{"SymInt?", "::std::optional<c10::SymInt>"},
        MapCase{"SymInt[]", "c10::SymIntArrayRef"},
        MapCase{"SymInt[3]", "c10::SymIntArrayRef"},
        MapCase{"SymInt[]?", "at::OptionalSymIntArrayRef"},
        MapCase{"SymInt[1]?", "at::OptionalSymIntArrayRef"},
        MapCase{"float", "double"},
        MapCase{"float?", "::std::optional<double>"},
        MapCase{"float[]", "at::ArrayRef<double>"},
        MapCase{"float[]?", "::std::optional<at::ArrayRef<double>>"},
        MapCase{"bool", "bool"}, MapCase{"bool?", "::std::optional<bool>"},
        MapCase{"bool[2]", "::std::array<bool, 2>"},
        MapCase{"bool[4]", "::std::array<bool, 4>"},
        MapCase{"str", "c10::string_view"},
        MapCase{"str?", "::std::optional<c10::string_view>"},
        MapCase{"str[]", "at::ArrayRef<c10::string_view>"},
        MapCase{"Scalar", "const at::Scalar&"},
        MapCase{"Scalar?", "const ::std::optional<at::Scalar>&"},
        MapCase{"Scalar[]", "at::ArrayRef<at::Scalar>"},
        MapCase{"ScalarType", "at::ScalarType"},
        MapCase{"ScalarType?", "::std::optional<at::ScalarType>"},
        MapCase{"Layout", "at::Layout"},
        MapCase{"Layout?", "::std::optional<at::Layout>"},
        MapCase{"Device", "at::Device"},
        MapCase{"Device?", "::std::optional<at::Device>"},
        MapCase{"DeviceIndex", "at::DeviceIndex"},
        MapCase{"MemoryFormat", "at::MemoryFormat"},
        MapCase{"MemoryFormat?", "::std::optional<at::MemoryFormat>"},
        MapCase{"Generator", "at::Generator"},
        MapCase{"Generator?", "::std::optional<at::Generator>"},
        MapCase{"Dimname", "at::Dimname"},
        MapCase{"Dimname[]", "at::DimnameList"},
        MapCase{"Dimname[]?", "::std::optional<at::DimnameList>"},
        MapCase{"Storage", "at::Storage"}, MapCase{"Stream", "at::Stream"},
        MapCase{"QScheme", "at::QScheme"}, MapCase{"SymBool", "c10::SymBool"}));

class ReturnMappingTest : public ::testing::TestWithParam<MapCase> {};

TEST_P(ReturnMappingTest, MapsToDispatcherReturnType) {
  std::string schema =
      std::string("f(Tensor self) -> ") + GetParam().schema_type;
  EXPECT_EQ(returnsCppType(parseFunctionSchema(schema).returns).text,
            GetParam().cpp);
}

INSTANTIATE_TEST_SUITE_P(
    AllReturns, ReturnMappingTest,
    ::testing::Values(
        MapCase{"()", "void"}, MapCase{"Tensor", "at::Tensor"},
        MapCase{"Tensor(a)", "at::Tensor"},
        MapCase{"Tensor(a!)", "at::Tensor&"},
        MapCase{"Tensor?", "::std::optional<at::Tensor>"},
        MapCase{"Tensor[]", "::std::vector<at::Tensor>"},
        MapCase{"Tensor(a)[]", "::std::vector<at::Tensor>"},
        MapCase{"(Tensor, Tensor)", "::std::tuple<at::Tensor, at::Tensor>"},
        MapCase{"(Tensor(a!) values, Tensor(b!) indices)",
                "::std::tuple<at::Tensor&, at::Tensor&>"},
        MapCase{"(Tensor, Tensor[])",
                "::std::tuple<at::Tensor, ::std::vector<at::Tensor>>"},
        MapCase{"(Tensor, Tensor, float, int)",
                "::std::tuple<at::Tensor, at::Tensor, double, int64_t>"},
        MapCase{"int", "int64_t"}, MapCase{"float", "double"},
        MapCase{"bool", "bool"}, MapCase{"Scalar", "at::Scalar"},
        MapCase{"ScalarType", "at::ScalarType"},
        MapCase{"QScheme", "at::QScheme"}, MapCase{"SymInt", "c10::SymInt"},
        MapCase{"SymBool", "c10::SymBool"},
        MapCase{"SymInt[]", "::std::vector<c10::SymInt>"},
        MapCase{"int[]", "::std::vector<int64_t>"}));

TEST(CppSignature, AddOutKeepsOutLastAndDropsDefaults) {
  CppSignature sig = dispatcherSignature(
      parseFunctionSchema("add.out(Tensor self, Tensor other, *, Scalar "
                          "alpha=1, Tensor(a!) out) -> Tensor(a!)"),
      {});
  EXPECT_EQ(sig.decl("wrapper_add_out"),
            "at::Tensor& wrapper_add_out(const at::Tensor& self, const "
            "at::Tensor& other, const at::Scalar& alpha, at::Tensor& out)");
  EXPECT_EQ(sig.callArgs(), "self, other, alpha, out");
  EXPECT_EQ(sig.functionType(),
            "at::Tensor&(const at::Tensor&, const at::Tensor&, const "
            "at::Scalar&, at::Tensor&)");
  ASSERT_EQ(sig.arguments.size(), 4u);
  EXPECT_EQ(sig.arguments[3].decl(), "at::Tensor& out");
  EXPECT_EQ(sig.arguments[3].argument->name, "out");
  EXPECT_TRUE(sig.arguments[3].type.isMutableRef());
  EXPECT_FALSE(sig.arguments[0].type.isMutableRef());
}

TEST(CppSignature, TensorOptionsStayUnpacked) {
  CppSignature sig = dispatcherSignature(
      parseFunctionSchema(
          "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, "
          "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
          "MemoryFormat? memory_format=None) -> Tensor"),
      {});
  EXPECT_EQ(sig.paramTypes(),
            "c10::SymIntArrayRef, ::std::optional<at::ScalarType>, "
            "::std::optional<at::Layout>, ::std::optional<at::Device>, "
            "::std::optional<bool>, ::std::optional<at::MemoryFormat>");
  EXPECT_EQ(sig.returns.text, "at::Tensor");
}

TEST(CppSignature, OptionsOfTheEntry) {
  // use_const_ref_for_mutable_tensors (resize_ and friends).
  FunctionSchema resize = parseFunctionSchema(
      "resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? "
      "memory_format=None) -> Tensor(a!)");
  SignatureOptions const_ref;
  const_ref.const_ref_for_mutable_tensors = true;
  EXPECT_EQ(dispatcherSignature(resize, const_ref).functionType(),
            "const at::Tensor&(const at::Tensor&, c10::SymIntArrayRef, "
            "::std::optional<at::MemoryFormat>)");
  EXPECT_EQ(dispatcherSignature(resize, {}).functionType(),
            "at::Tensor&(at::Tensor&, c10::SymIntArrayRef, "
            "::std::optional<at::MemoryFormat>)");

  // Structured entries take tensor lists as ITensorListRef (cat).
  FunctionSchema cat =
      parseFunctionSchema("cat(Tensor[] tensors, int dim=0) -> Tensor");
  SignatureOptions ilist;
  ilist.ilistref_for_tensor_lists = true;
  EXPECT_EQ(dispatcherSignature(cat, ilist).paramTypes(),
            "const at::ITensorListRef&, int64_t");
  EXPECT_EQ(dispatcherSignature(cat, {}).paramTypes(),
            "at::TensorList, int64_t");

  NativeFunction fn;
  fn.schema = cat;
  fn.structured_delegate = "cat.out";
  EXPECT_TRUE(SignatureOptions::of(fn).ilistref_for_tensor_lists);
  EXPECT_FALSE(SignatureOptions::of(fn).const_ref_for_mutable_tensors);
  EXPECT_EQ(dispatcherSignature(fn).paramTypes(),
            "const at::ITensorListRef&, int64_t");
}

TEST(CppSignature, UnmappableTypesAreErrors) {
  EXPECT_THROW(argumentCppType(parseType("bool[]")), SchemaParseError);
  EXPECT_THROW(argumentCppType(parseType("Any")), SchemaParseError);
  EXPECT_THROW(
      returnsCppType(
          parseFunctionSchema("f(Tensor self) -> Tensor(a!)[]").returns),
      SchemaParseError);
  EXPECT_THROW(
      returnsCppType(parseFunctionSchema("f(Tensor self) -> int[2]").returns),
      SchemaParseError);
  try {
    argumentCppType(parseType("bool[]"));
  } catch (const SchemaParseError& e) {
    EXPECT_NE(e.detail().find("bool[]"), std::string::npos) << e.detail();
  }
}

}  // namespace
}  // namespace accgen::schema
