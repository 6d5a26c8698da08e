// The schema-diff command: comparing two registries, mapping the result
// onto a backend, and printing it for people (text) and tools (JSON).
#include "generator/upgrade/schema_diff.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "generator/spec/spec.h"
#include "generator/upgrade/registered_ops.h"
#include "generator/upgrade/schema_source.h"

namespace accgen::upgrade {
namespace {

bool hasClass(const std::vector<Change>& changes, ChangeClass cls) {
  return std::any_of(changes.begin(), changes.end(),
                     [&](const Change& c) { return c.cls == cls; });
}

bool onlyClasses(const std::vector<Change>& changes,
                 std::initializer_list<ChangeClass> allowed) {
  return !changes.empty() &&
         std::all_of(changes.begin(), changes.end(), [&](const Change& c) {
           return std::find(allowed.begin(), allowed.end(), c.cls) !=
                  allowed.end();
         });
}

std::string versionSuffix(const std::string& version) {
  return version.empty() ? "" : " (torch " + version + ")";
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

struct Buckets {
  std::vector<const OperatorDiff*> removed, added, action, default_only,
      tag_only;
};

Buckets bucket(const SchemaDiff& diff) {
  Buckets b;
  for (const auto& op : diff.operators) {
    switch (op.status) {
      case DiffStatus::kRemoved:
        b.removed.push_back(&op);
        break;
      case DiffStatus::kAdded:
        b.added.push_back(&op);
        break;
      case DiffStatus::kChanged:
        if (op.needsAction()) {
          b.action.push_back(&op);
        } else if (op.tagOnly()) {
          b.tag_only.push_back(&op);
        } else {
          b.default_only.push_back(&op);
        }
        break;
    }
  }
  return b;
}

nlohmann::ordered_json changesJson(const std::vector<Change>& changes) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& c : changes) {
    arr.push_back({{"class", changeClassName(c.cls)}, {"detail", c.detail}});
  }
  return arr;
}

nlohmann::ordered_json classesJson(const std::vector<Change>& changes) {
  std::vector<std::string> names;
  for (const auto& c : changes) {
    std::string n(changeClassName(c.cls));
    if (std::find(names.begin(), names.end(), n) == names.end()) {
      names.push_back(n);
    }
  }
  return names;
}

nlohmann::ordered_json orNull(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json(nullptr)
                   : nlohmann::ordered_json(s);
}

}  // namespace

std::string_view diffStatusName(DiffStatus status) {
  switch (status) {
    case DiffStatus::kAdded:
      return "added";
    case DiffStatus::kRemoved:
      return "removed";
    case DiffStatus::kChanged:
      return "changed";
  }
  return "changed";
}

bool OperatorDiff::defaultOnly() const {
  return hasClass(changes, ChangeClass::kDefaultChange) &&
         onlyClasses(changes,
                     {ChangeClass::kDefaultChange, ChangeClass::kTagChange});
}

bool OperatorDiff::tagOnly() const {
  return onlyClasses(changes, {ChangeClass::kTagChange});
}

const OperatorDiff* SchemaDiff::find(std::string_view name) const {
  auto it = std::lower_bound(
      operators.begin(), operators.end(), name,
      [](const OperatorDiff& d, std::string_view n) { return d.name < n; });
  return it != operators.end() && it->name == name ? &*it : nullptr;
}

SchemaDiff diffSchemas(const schema::SchemaRegistry& old_registry,
                       const schema::SchemaRegistry& new_registry) {
  SchemaDiff diff;
  std::map<std::string, std::vector<std::string>> old_overloads, new_overloads;
  for (const auto& fn : old_registry.functions()) {
    old_overloads[fn.schema.name].push_back(fn.schema.fullName());
  }
  for (const auto& fn : new_registry.functions()) {
    new_overloads[fn.schema.name].push_back(fn.schema.fullName());
  }
  for (const auto& fn : old_registry.functions()) {
    const std::string name = fn.schema.fullName();
    const schema::NativeFunction* now = new_registry.find(name);
    OperatorDiff d;
    d.name = name;
    d.old_fn = &fn;
    if (!now) {
      d.status = DiffStatus::kRemoved;
      auto it = new_overloads.find(fn.schema.name);
      std::string detail = "removed";
      if (it != new_overloads.end()) {
        std::vector<std::string> left = it->second;
        std::sort(left.begin(), left.end());
        std::string list;
        for (const auto& l : left)
          list += (list.empty() ? "" : ", ") + l;
        detail += "; other overloads remain: " + list;
      } else {
        detail += "; no overload of '" + fn.schema.name + "' remains";
      }
      d.changes.push_back({ChangeClass::kRemovedOperator, detail});
      diff.operators.push_back(std::move(d));
      continue;
    }
    d.new_fn = now;
    d.changes = diffSchema(fn.schema, now->schema);
    auto tags = diffTags(fn.tags, now->tags);
    d.changes.insert(d.changes.end(), tags.begin(), tags.end());
    if (!d.changes.empty()) diff.operators.push_back(std::move(d));
  }
  for (const auto& fn : new_registry.functions()) {
    const std::string name = fn.schema.fullName();
    if (old_registry.find(name)) continue;
    OperatorDiff d;
    d.name = name;
    d.status = DiffStatus::kAdded;
    d.new_fn = &fn;
    if (old_overloads.count(fn.schema.name)) {
      d.changes.push_back({ChangeClass::kAddedOverload,
                           "new overload of '" + fn.schema.name + "'"});
    } else {
      d.changes.push_back({ChangeClass::kAddedOperator, "new operator"});
    }
    diff.operators.push_back(std::move(d));
  }
  std::sort(diff.operators.begin(), diff.operators.end(),
            [](const OperatorDiff& a, const OperatorDiff& b) {
              return a.name < b.name;
            });
  return diff;
}

std::vector<std::string> BackendImpact::kernelFilesToEdit() const {
  std::set<std::string> files;
  for (const auto& a : affected) {
    if (!a.kernel_file.empty()) files.insert(a.kernel_file);
  }
  return {files.begin(), files.end()};
}

bool BackendImpact::needsAction() const {
  return std::any_of(affected.begin(), affected.end(),
                     [](const AffectedOperator& a) { return a.needs_action; });
}

BackendImpact analyzeBackend(const model::Backend& backend,
                             const SchemaDiff& diff) {
  BackendImpact impact;
  impact.specs_dir = backend.specDir();
  const auto ops = registeredOps(backend);
  impact.registered = ops.size();
  for (const RegisteredOp& op : ops) {
    if (!op.function) continue;  // custom: the backend's own schema
    const OperatorDiff* d = diff.find(op.name);
    if (!d) continue;
    AffectedOperator a;
    a.name = op.name;
    a.kind = op.kind;
    a.via = op.via;
    a.loc = op.loc;
    a.diff = d;
    a.needs_action = d->needsAction();
    const std::string fn_name = op.user_signature ? op.kernel_name : "kernel";
    if (d->old_fn) {
      schema::CppSignature old_sig = schema::dispatcherSignature(*d->old_fn);
      if (op.user_signature) a.old_cpp = old_sig.decl(fn_name);
      if (d->new_fn) {
        schema::CppSignature new_sig = schema::dispatcherSignature(*d->new_fn);
        if (op.user_signature) {
          a.new_cpp = new_sig.decl(fn_name);
          if (a.needs_action && needsKernelEdit(old_sig, new_sig, d->changes)) {
            a.kernel_file = op.kernel_file;
          }
        }
      }
    }
    impact.affected.push_back(std::move(a));
  }
  return impact;
}

std::string formatSchemaDiff(const DiffInputs& in, const SchemaDiff& diff,
                             const BackendImpact* impact) {
  const Buckets b = bucket(diff);
  std::ostringstream os;
  os << "accgen schema-diff\n";
  os << "  old: " << in.old_label << versionSuffix(in.old_version) << "\n";
  os << "  new: " << in.new_label << versionSuffix(in.new_version) << "\n\n";
  if (diff.operators.empty()) {
    os << "The schemas are the same.\n";
  } else {
    os << "Summary: " << b.removed.size() << " removed, " << b.added.size()
       << " added, " << b.action.size() << " changed needing action, "
       << b.default_only.size() << " default-only, " << b.tag_only.size()
       << " tag-only\n";
  }

  if (!b.removed.empty()) {
    os << "\nRemoved operators (" << b.removed.size()
       << "): backends registering them must drop them\n";
    for (const auto* d : b.removed) {
      os << "  " << d->name << "\n";
      os << "      " << d->changes.front().detail << "\n";
      os << "      - " << d->old_fn->schema.text << "\n";
    }
  }
  if (!b.action.empty()) {
    os << "\nChanged operators needing action (" << b.action.size() << ")\n";
    for (const auto* d : b.action) {
      os << "  " << d->name << "\n";
      for (const auto& c : d->changes) {
        os << "      " << changeClassName(c.cls) << ": " << c.detail << "\n";
      }
      os << "      - " << d->old_fn->schema.text << "\n";
      os << "      + " << d->new_fn->schema.text << "\n";
    }
  }
  if (!b.added.empty()) {
    os << "\nAdded operators and overloads (" << b.added.size()
       << "): no action needed\n";
    for (const auto* d : b.added) {
      os << "  " << d->name << "  (" << changeClassName(d->changes.front().cls)
         << ")\n";
      os << "      + " << d->new_fn->schema.text << "\n";
    }
  }
  if (!b.default_only.empty()) {
    os << "\nDefault-only changes (" << b.default_only.size()
       << "): no action needed; dispatcher signatures carry no defaults\n";
    for (const auto* d : b.default_only) {
      os << "  " << d->name << "\n";
      for (const auto& c : d->changes) {
        os << "      " << changeClassName(c.cls) << ": " << c.detail << "\n";
      }
    }
  }
  if (!b.tag_only.empty()) {
    os << "\nTag changes (" << b.tag_only.size() << "): no action needed\n";
    for (const auto* d : b.tag_only) {
      os << "  " << d->name << ": " << d->changes.front().detail << "\n";
    }
  }

  if (impact) {
    std::size_t needing = 0;
    for (const auto& a : impact->affected)
      needing += a.needs_action;
    os << "\nThis backend (" << impact->specs_dir
       << "): " << plural(impact->registered, "registration", "registrations")
       << ", " << impact->affected.size() << " affected, " << needing
       << " needing action\n";
    for (const auto& a : impact->affected) {
      os << "  " << a.name << "  [" << a.kind;
      if (a.via != a.name) os << " via " << a.via;
      os << "]  " << a.loc.str() << "\n";
      const OperatorDiff& d = *a.diff;
      if (d.status == DiffStatus::kRemoved) {
        os << "      removed in the new schemas: drop '" << a.via
           << "' from operators.yaml";
        if (a.kind == "kernel")
          os << " (its user kernel file is then orphaned)";
        os << "\n";
        continue;
      }
      for (const auto& c : d.changes) {
        os << "      " << changeClassName(c.cls) << ": " << c.detail << "\n";
      }
      if (!a.needs_action) {
        os << "      no action needed\n";
      } else if (!a.kernel_file.empty()) {
        os << "      edit " << a.kernel_file
           << ": the kernel's signature changes\n";
        os << "      C++ old: " << a.old_cpp << "\n";
        os << "      C++ new: " << a.new_cpp << "\n";
      } else if (!a.old_cpp.empty()) {
        os << "      the user kernel needs no edit (same C++ types); accept "
              "with `accgen generate --update-lock`\n";
      } else {
        os << "      generated code only; accept with `accgen generate "
              "--update-lock`\n";
      }
    }
    const auto files = impact->kernelFilesToEdit();
    if (!files.empty()) {
      os << "\nUser kernel files to edit (" << files.size() << "):\n";
      for (const auto& f : files)
        os << "  " << f << "\n";
    }
  }

  const int code = schemaDiffExitCode(diff, impact);
  os << "\n";
  if (impact) {
    os << (code ? "Result: this backend needs action (exit 1)\n"
                : "Result: nothing in this backend needs action (exit 0)\n");
  } else {
    os << (code ? "Result: the schemas differ (exit 1)\n"
                : "Result: no differences (exit 0)\n");
  }
  return os.str();
}

nlohmann::ordered_json schemaDiffJson(const DiffInputs& in,
                                      const SchemaDiff& diff,
                                      const BackendImpact* impact) {
  const Buckets b = bucket(diff);
  nlohmann::ordered_json j;
  j["old"] = {{"source", in.old_label},
              {"torch_version", orNull(in.old_version)}};
  j["new"] = {{"source", in.new_label},
              {"torch_version", orNull(in.new_version)}};
  j["summary"] = {{"removed", b.removed.size()},
                  {"added", b.added.size()},
                  {"needs_action", b.action.size()},
                  {"default_only", b.default_only.size()},
                  {"tag_only", b.tag_only.size()}};
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const auto& d : diff.operators) {
    nlohmann::ordered_json o;
    o["name"] = d.name;
    o["status"] = diffStatusName(d.status);
    o["needs_action"] = d.needsAction();
    o["classes"] = classesJson(d.changes);
    o["changes"] = changesJson(d.changes);
    o["old_schema"] = d.old_fn ? nlohmann::ordered_json(d.old_fn->schema.text)
                               : nlohmann::ordered_json(nullptr);
    o["new_schema"] = d.new_fn ? nlohmann::ordered_json(d.new_fn->schema.text)
                               : nlohmann::ordered_json(nullptr);
    ops.push_back(o);
  }
  j["operators"] = ops;
  if (impact) {
    nlohmann::ordered_json be;
    be["specs"] = impact->specs_dir;
    be["registered"] = impact->registered;
    nlohmann::ordered_json affected = nlohmann::ordered_json::array();
    for (const auto& a : impact->affected) {
      nlohmann::ordered_json o;
      o["name"] = a.name;
      o["kind"] = a.kind;
      o["via"] = a.via;
      o["location"] = a.loc.str();
      o["status"] = diffStatusName(a.diff->status);
      o["needs_action"] = a.needs_action;
      o["kernel_file"] = orNull(a.kernel_file);
      o["old_cpp"] = orNull(a.old_cpp);
      o["new_cpp"] = orNull(a.new_cpp);
      o["classes"] = classesJson(a.diff->changes);
      o["changes"] = changesJson(a.diff->changes);
      affected.push_back(o);
    }
    be["affected"] = affected;
    be["kernel_files_to_edit"] = impact->kernelFilesToEdit();
    j["backend"] = be;
  } else {
    j["backend"] = nullptr;
  }
  j["exit_code"] = schemaDiffExitCode(diff, impact);
  return j;
}

int schemaDiffExitCode(const SchemaDiff& diff, const BackendImpact* impact) {
  if (impact) return impact->needsAction() ? 1 : 0;
  return diff.operators.empty() ? 0 : 1;
}

int runSchemaDiff(const SchemaDiffOptions& options, std::ostream& out,
                  std::ostream& err) {
  try {
    SchemaSource old_src =
        loadSchemaSource(options.old_source, options.wheels_dir);
    SchemaSource new_src =
        loadSchemaSource(options.new_source, options.wheels_dir);
    const SchemaDiff diff = diffSchemas(old_src.registry, new_src.registry);

    std::optional<model::Backend> backend;
    if (options.specs_dir) {
      DiagnosticEngine spec_diags;
      auto specs = spec::loadSpecs(*options.specs_dir, spec_diags);
      if (!specs) {
        spec_diags.print(err);
        return static_cast<int>(ExitCode::kInvalidInput);
      }
      // The specs describe the backend as it is: against OLD. A backend
      // already edited for NEW (an operator only NEW has) validates there.
      // DispatchStub names are not this command's concern: an empty set
      // of known stubs would reject them, no set at all warns, so the
      // warnings of this build are dropped.
      DiagnosticEngine old_diags;
      backend = model::buildBackend(*specs, old_src.registry, old_diags);
      if (!backend) {
        DiagnosticEngine new_diags;
        backend = model::buildBackend(*specs, new_src.registry, new_diags);
        if (!backend) {
          for (const auto& d : old_diags.diagnostics()) {
            if (d.severity != Severity::kWarning) err << d.format() << "\n";
          }
          return static_cast<int>(ExitCode::kInvalidInput);
        }
      }
    }
    std::optional<BackendImpact> impact;
    if (backend) impact = analyzeBackend(*backend, diff);
    const DiffInputs inputs{old_src.label, old_src.torch_version, new_src.label,
                            new_src.torch_version};
    const BackendImpact* impact_ptr = impact ? &*impact : nullptr;
    if (options.json) {
      out << schemaDiffJson(inputs, diff, impact_ptr).dump(2) << "\n";
    } else {
      out << formatSchemaDiff(inputs, diff, impact_ptr);
    }
    return schemaDiffExitCode(diff, impact_ptr);
  } catch (const AccgenError& e) {
    err << e.what() << "\n";
    return static_cast<int>(e.code());
  }
}

}  // namespace accgen::upgrade
