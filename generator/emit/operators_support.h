// Shared pieces of the operator emitters (operators.cpp for the emulate,
// stub, fallback and autocast registrations, operators_kernels.cpp for user
// kernels and custom operators): how an aten function is named in ATen's C++
// headers, and how a C++ signature becomes template data.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "generator/emit/emitter.h"
#include "generator/model/backend.h"
#include "generator/schema/schema.h"

namespace accgen::emit::ops {

/// The spec files named in the banners of operator files.
inline constexpr const char* kOperatorsSpec = "specs/operators.yaml";
inline constexpr const char* kAutocastSpec = "specs/autocast.yaml";

/// An OutputFile for templates/backend/<path>.mustache.
OutputFile backendFile(std::string path, nlohmann::json data,
                       std::string source = kOperatorsSpec);

/// The at::_ops struct of an aten function: "at::_ops::add__Tensor".
std::string opsStruct(const schema::FunctionSchema& schema);

/// The ATen header declaring it: "ATen/ops/add_ops.h" (one per group, named
/// after the in-place-less base name).
std::string opsHeader(const schema::FunctionSchema& schema);

/// The header of its C++ meta functions (structured groups only):
/// "ATen/ops/add_meta_dispatch.h".
std::string metaHeader(const schema::FunctionSchema& schema);

/// The C++ meta function computing the results of a functional or in-place
/// member of a structured group: "at::meta::add", "at::meta::add_",
/// "at::meta::upsample_nearest2d_symint" (SymInt signatures).
std::string metaFunction(const schema::FunctionSchema& schema,
                         const schema::CppSignature& signature);

/// True when the function belongs to a structured group, whose members have
/// C++ meta functions in at::meta.
bool hasCppMeta(const schema::NativeFunction& fn);

/// "self, other, alpha" with each tensor-like binding passed through
/// `wrap(...)` when wrap is not empty: "toMeta(self), toMeta(other), alpha".
std::string callArgs(const schema::CppSignature& signature,
                     const std::string& wrap = "");

/// True for a binding whose C++ type carries tensors (Tensor, Tensor?,
/// Tensor[], Tensor?[]).
bool isTensorLike(const schema::Binding& binding);

/// A C++ string literal's contents: `"`, `\` and control characters
/// escaped ("a\"b\n" for a"b and a newline).
std::string cppEscape(std::string_view text);

/// Sorted, de-duplicated strings as a JSON array.
nlohmann::json sortedUnique(std::vector<std::string> values);

/// The data of the C++ return type: `returns` (text) and `returns_void`.
nlohmann::json returnsData(const schema::CppSignature& signature);

/// csrc/ops/KernelDecls.h, csrc/ops/RegisterKernels.cpp and the user-owned
/// kernels/*.cpp of `kernel` operators (operators_kernels.cpp).
void appendKernelFiles(const model::Backend& backend,
                       std::vector<OutputFile>& files);

/// csrc/ops/CustomOps.cpp and the user-owned kernels/*.cpp of custom
/// operators (operators_kernels.cpp).
void appendCustomFiles(const model::Backend& backend,
                       std::vector<OutputFile>& files);

}  // namespace accgen::emit::ops
