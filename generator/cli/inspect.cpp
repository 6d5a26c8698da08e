// `accgen inspect`: schema, dispatcher signature, dispatch entries, group
// and, inside a project, how the backend registers the operator.
#include "generator/cli/inspect.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "generator/cli/pipeline.h"
#include "generator/spec/spec.h"
#include "generator/support/diagnostics.h"

namespace accgen::cli {
namespace {

/// The aten name without an "aten::" prefix.
std::string stripAten(std::string name) {
  if (name.rfind("aten::", 0) == 0) name.erase(0, 6);
  return name;
}

nlohmann::ordered_json describeRegistration(const model::Operator& op,
                                            std::string_view name) {
  nlohmann::ordered_json j;
  j["kind"] = std::string(spec::kindName(op.kind));
  j["listed_as"] = op.full_name;
  j["spec"] = op.loc.str();
  if (const auto* member = op.member(name)) {
    j["wrapper"] = member->wrapper_name;
    j["role"] = std::string(schema::kindName(member->role));
    j["primary"] = member->primary;
  }
  if (!op.kernel_name.empty()) {
    j["kernel"] = op.kernel_name;
    j["kernel_file"] = op.kernel_file;
  }
  if (!op.stub.empty()) j["stub"] = op.stub;
  return j;
}

}  // namespace

int runInspect(const InspectOptions& options, std::ostream& out,
               std::ostream& err) {
  SchemaSource schemas = loadSchemas(options.schemas);
  std::optional<model::Backend> backend;
  if (std::filesystem::is_directory(options.specs)) {
    backend = loadBackend(options.specs, schemas, err);
  }

  nlohmann::ordered_json j;
  const std::string name = stripAten(options.op);
  const model::CustomOperator* custom =
      backend ? backend->findCustom(name) : nullptr;
  const schema::NativeFunction* fn = schemas.registry->find(name);

  if (custom) {
    j["name"] = custom->qualified_name;
    j["schema"] = custom->schema->text;
    j["signature"] = custom->signature.decl(custom->wrapper_name);
    j["registration"] = {{"kind", spec::kindName(spec::OpKind::kCustom)},
                         {"kernel", custom->kernel_name},
                         {"kernel_file", custom->kernel_file},
                         {"meta", custom->meta},
                         {"autograd", custom->autograd},
                         {"spec", custom->loc.str()}};
  } else if (fn) {
    j["name"] = "aten::" + fn->schema.fullName();
    j["schema"] = fn->schema.text;
    j["defined_at"] = fn->loc.str();
    // The signature the backend would register it with, options and all.
    j["signature"] =
        model::registrationOf(schemas.registry->shared(*fn), /*primary=*/true)
            .signature.decl("kernel");
    nlohmann::ordered_json dispatch = nlohmann::ordered_json::object();
    for (const auto& [key, kernel] : fn->dispatch)
      dispatch[key] = kernel;
    j["dispatch"] = dispatch;
    j["composite_implicit"] = fn->hasCompositeImplicitAutograd();
    j["cpu_kernel"] = schemas.registry->hasCpuKernel(*fn);
    auto group = schemas.registry->group(*fn);
    nlohmann::ordered_json g = nlohmann::ordered_json::object();
    if (group.functional) g["functional"] = group.functional->schema.fullName();
    if (group.inplace) g["inplace"] = group.inplace->schema.fullName();
    if (group.out) g["out"] = group.out->schema.fullName();
    j["group"] = g;
    if (backend) {
      const auto* op = backend->findRegistration(name);
      j["registration"] =
          op ? describeRegistration(*op, name)
             : nlohmann::ordered_json{
                   {"kind", std::string("global fallback (") +
                                spec::fallbackPolicyName(backend->fallback()) +
                                ")"}};
    }
  } else {
    std::string message = "error: unknown operator '" + options.op + "'";
    std::string near = schemas.registry->nearest(name);
    if (!near.empty()) message += "; did you mean '" + near + "'?";
    throw AccgenError(ExitCode::kInvalidInput, message);
  }

  if (options.json) {
    out << j.dump(2) << "\n";
    return 0;
  }
  out << j["name"].get<std::string>() << "\n";
  auto line = [&](const char* label, const std::string& value) {
    out << "  " << label << std::string(12 - std::string(label).size(), ' ')
        << value << "\n";
  };
  line("schema", j["schema"].get<std::string>());
  line("signature", j["signature"].get<std::string>());
  if (j.contains("defined_at")) line("defined at", j["defined_at"]);
  if (j.contains("dispatch")) {
    std::string d;
    for (const auto& [key, kernel] : j["dispatch"].items()) {
      d += (d.empty() ? "" : ", ") + key + ": " + kernel.get<std::string>();
    }
    line("dispatch", d.empty() ? "(none: CompositeImplicitAutograd)" : d);
  }
  if (j.contains("group")) {
    std::string g;
    for (const auto& [role, member] : j["group"].items()) {
      g += (g.empty() ? "" : ", ") + role + " " + member.get<std::string>();
    }
    if (!g.empty()) line("group", g);
  }
  if (j.contains("registration")) {
    std::string r;
    for (const auto& [key, value] : j["registration"].items()) {
      r += (r.empty() ? "" : ", ") + key + "=" +
           (value.is_string() ? value.get<std::string>() : value.dump());
    }
    line("backend", r);
  }
  return 0;
}

}  // namespace accgen::cli
