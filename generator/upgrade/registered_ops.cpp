// Flattening a Backend into the registrations the upgrade tools compare.
#include "generator/upgrade/registered_ops.h"

#include <algorithm>

namespace accgen::upgrade {

std::string RegisteredOp::cppDecl() const {
  return signature.decl(user_signature ? kernel_name : "kernel");
}

std::vector<RegisteredOp> registeredOps(const model::Backend& backend) {
  std::vector<RegisteredOp> ops;
  for (const model::Operator& op : backend.operators()) {
    for (const model::Registration& m : op.members) {
      RegisteredOp r;
      r.name = m.fullName();
      r.qualified_name = "aten::" + r.name;
      r.schema = &m.schema();
      r.function = m.function.get();
      r.signature = m.signature;
      r.kind = std::string(spec::kindName(op.kind));
      r.via = op.full_name;
      // One body serves a kernel group: the user implements the primary
      // form, the generated wrappers adapt the siblings to it.
      r.user_signature = spec::kindTraits(op.kind).user_kernel && m.primary;
      if (r.user_signature) r.kernel_name = op.kernel_name;
      r.kernel_file = op.kernel_file;
      r.loc = op.loc;
      ops.push_back(std::move(r));
    }
  }
  for (const model::CustomOperator& c : backend.customOperators()) {
    RegisteredOp r;
    r.qualified_name = c.qualified_name;
    r.name = c.qualified_name;
    r.schema = c.schema.get();
    r.signature = c.signature;
    r.kind = std::string(spec::kindName(spec::OpKind::kCustom));
    r.via = c.qualified_name;
    r.user_signature = true;
    r.kernel_name = c.kernel_name;
    r.kernel_file = c.kernel_file;
    r.loc = c.loc;
    ops.push_back(std::move(r));
  }
  std::sort(ops.begin(), ops.end(),
            [](const RegisteredOp& a, const RegisteredOp& b) {
              return a.qualified_name < b.qualified_name;
            });
  return ops;
}

}  // namespace accgen::upgrade
