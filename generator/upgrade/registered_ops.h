// A flat view of what a backend registers, for the upgrade tools.
//
// The lock, schema-diff's backend section and the user-kernel checks all
// walk the same list: every aten function the backend registers (group
// members included) and every custom operator, each with its schema, its
// C++ signature and, where a person writes its body, the user kernel
// function and file. This is the only file of generator/upgrade that reads
// the backend model's structure.
#pragma once

#include <string>
#include <vector>

#include "generator/model/backend.h"

namespace accgen::upgrade {

/// One operator registration of a backend.
struct RegisteredOp {
  /// Qualified name as the dispatcher knows it: "aten::add.out",
  /// "accel::scaled_add".
  std::string qualified_name;
  /// The name as operators.yaml spells it: "add.out"; for custom operators
  /// the qualified name.
  std::string name;
  /// The schema (owned by the Backend).
  const schema::FunctionSchema* schema = nullptr;
  /// The native_functions.yaml entry; nullptr for custom operators.
  const schema::NativeFunction* function = nullptr;
  /// The C++ signature of the registered kernel.
  schema::CppSignature signature;
  /// "builtin", "kernel", "stub", "emulate", "fallback" or "custom".
  std::string kind;
  /// The operators.yaml entry that registers it ("add.Tensor" registers
  /// "add.out" through its group); the name itself for custom operators.
  std::string via;
  /// The user writes a body for exactly this signature: the primary form
  /// of a `kernel` entry, or a custom operator.
  bool user_signature = false;
  /// The user-written function ("kernel_add_Tensor") when user_signature.
  std::string kernel_name;
  /// The user-owned file of the entry ("kernels/add_Tensor.cpp") for
  /// `kernel` entries (all members) and custom operators; "" otherwise.
  std::string kernel_file;
  /// The spec entry.
  SourceLoc loc;

  /// "at::Tensor kernel_add_Tensor(const at::Tensor& self, ...)" when
  /// user_signature, else the signature under the name "<kind> kernel".
  std::string cppDecl() const;
};

/// Every registration of `backend`, sorted by qualified name. Pointers and
/// signatures refer into `backend`, which must outlive the result.
std::vector<RegisteredOp> registeredOps(const model::Backend& backend);

}  // namespace accgen::upgrade
