// Building, rendering, parsing and comparing the schema lock.
//
// Note [What counts as drift]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A locked operator drifts when its schema changed in a way that needs
// someone's attention (changes.h, classNeedsAction): a type, an argument, a
// return, an alias annotation, a name or an order. Two changes do not stop
// `generate`: a new default value (a backend kernel never sees defaults:
// the dispatcher passes every argument) and a different spelling of the
// same schema (the comparison is of parsed schemas, not of text). Both are
// absorbed into the lock silently, as are added and removed operators.
// Custom operators are locked like aten ones: their schema lives in the
// user's own operators.yaml, but an edit there invalidates the user's
// kernel body just the same, and the report says which file to change.
//
// Note [The torch version in the lock]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The lock records the release without its local part: "2.13.0" for both
// 2.13.0+cpu and 2.13.0+cu130. The builds of one release share their
// schemas, and a lock that named the build would differ between a
// developer's CUDA install and CI's CPU wheel, failing `generate --check`
// for nothing.
#include "generator/upgrade/lock.h"
#include "generator/support/io.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "generator/spec/yaml_reader.h"

namespace accgen::upgrade {
namespace {

namespace fs = std::filesystem;

/// A YAML double-quoted scalar. Schemas hold quotes (`str padding="valid"`)
/// and nothing else that needs escaping.
/// Appends `s` double-quoted to `out`.
void appendQuoted(std::string& out, std::string_view s) {
  out += '"';
  // Runs without a quote or backslash go in whole (found with memchr): a
  // lock holds thousands of schemas and C++ declarations.
  for (std::size_t i;
       (i = std::min(s.find('"'), s.find('\\'))) != std::string_view::npos;
       s.remove_prefix(i + 1)) {
    out.append(s.substr(0, i));
    out += '\\';
    out += s[i];
  }
  out.append(s);
  out += '"';
}

std::string yamlQuote(std::string_view s) {
  std::string out;
  appendQuoted(out, s);
  return out;
}

/// The operator part of "aten::add.out": "add.out".
std::string_view unqualified(std::string_view op) {
  auto pos = op.find("::");
  return pos == std::string_view::npos ? op : op.substr(pos + 2);
}

/// The C++ declaration of `schema_text` under `name`, with the signature
/// options of the current entry (they are per-entry switches that do not
/// change between releases); "" when the text does not parse or map.
std::string cppFor(const std::string& schema_text, const RegisteredOp* now,
                   schema::CppSignature* sig_out,
                   schema::FunctionSchema* keep_alive) {
  try {
    *keep_alive = schema::parseFunctionSchema(schema_text);
    schema::SignatureOptions options;
    if (now && now->function) {
      options = schema::SignatureOptions::of(*now->function);
    }
    *sig_out = schema::dispatcherSignature(*keep_alive, options);
    std::string name = now && now->user_signature ? now->kernel_name : "kernel";
    return sig_out->decl(name);
  } catch (const schema::SchemaParseError&) {
    return "";
  }
}

}  // namespace

const LockEntry* SchemaLock::find(std::string_view op) const {
  auto it = std::lower_bound(
      entries.begin(), entries.end(), op,
      [](const LockEntry& e, std::string_view o) { return e.op < o; });
  return it != entries.end() && it->op == op ? &*it : nullptr;
}

SchemaLock buildLock(const std::vector<RegisteredOp>& ops,
                     const std::string& torch_version) {
  SchemaLock lock;
  // See Note [The torch version in the lock].
  lock.torch_version = torch_version.substr(0, torch_version.find('+'));
  for (const RegisteredOp& op : ops) {
    LockEntry e;
    e.op = op.qualified_name;
    e.schema = op.schema->text;
    if (op.user_signature) e.cpp = op.cppDecl();
    e.loc = op.loc;
    lock.entries.push_back(std::move(e));
  }
  std::sort(lock.entries.begin(), lock.entries.end(),
            [](const LockEntry& a, const LockEntry& b) { return a.op < b.op; });
  return lock;
}

SchemaLock buildLock(const model::Backend& backend,
                     const std::string& torch_version) {
  return buildLock(registeredOps(backend), torch_version);
}

std::string renderLock(const SchemaLock& lock) {
  std::string s;
  s += "# accgen.lock: the schema of every operator this backend registers,\n";
  s += "# and the torch release they come from. `accgen generate` stops when\n";
  s += "# one of them changes; review the report (or `accgen schema-diff`),\n";
  s += "# edit the kernels it names, then accept with\n";
  s += "# `accgen generate --update-lock`. Keep this file under version "
       "control.\n";
  s += "torch: " + yamlQuote(lock.torch_version) + "\n";
  if (lock.entries.empty()) return s + "operators: {}\n";
  s += "operators:\n";
  std::size_t size = s.size();
  for (const LockEntry& e : lock.entries) {
    size += e.op.size() + e.schema.size() + e.cpp.size() + 32;
  }
  s.reserve(size);
  for (const LockEntry& e : lock.entries) {
    s += "  ";
    appendQuoted(s, e.op);
    s += ": {schema: ";
    appendQuoted(s, e.schema);
    if (!e.cpp.empty()) {
      s += ", cpp: ";
      appendQuoted(s, e.cpp);
    }
    s += "}\n";
  }
  return s;
}

namespace {

/// Reads the lock into `lock`, reporting to `diags` (the reader hands its
/// diagnostics over, sorted by position, when it goes out of scope).
void readLock(std::string_view text, const std::string& path,
              DiagnosticEngine& diags, SchemaLock& lock) {
  spec::YamlReader reader(path, text, diags);
  if (!reader.ok()) return;
  const SourceLoc file_loc{path, 0, 0};
  auto top = reader.readMap(reader.root(), "accgen.lock",
                            {"torch", "operators"}, file_loc);
  if (!top) return;
  if (const auto* f = top->find("torch")) {
    if (auto v = reader.fieldString(*f)) lock.torch_version = *v;
  } else {
    reader.missingKey("torch", "accgen.lock", file_loc);
  }
  const auto* ops = top->find("operators");
  if (!ops) {
    reader.missingKey("operators", "accgen.lock", file_loc);
    return;
  }
  if (!ops->value.IsMap()) {
    reader.error(reader.valueLoc(ops->key_node, ops->value),
                 "expected a map of operators, got " +
                     spec::YamlReader::describe(ops->value));
    return;
  }
  std::map<std::string, SourceLoc> seen;
  for (const auto& item : ops->value) {
    const YAML::Node& key = item.first;
    SourceLoc key_loc = reader.loc(key);
    auto name = reader.readString(key, "an operator name", key_loc);
    if (!name) continue;
    auto [it, inserted] = seen.emplace(*name, key_loc);
    if (!inserted) {
      reader.error(key_loc, "duplicate operator '" + *name + "'",
                   {"first listed at " + it->second.str()});
      continue;
    }
    auto entry =
        reader.readMap(item.second, "a lock entry", {"schema", "cpp"}, key_loc);
    if (!entry) continue;
    LockEntry e;
    e.op = *name;
    e.loc = key_loc;
    if (const auto* s = entry->find("schema")) {
      if (auto v = reader.fieldString(*s)) {
        e.schema = *v;
        try {
          auto parsed = schema::parseFunctionSchema(e.schema);
          if (parsed.fullName() != unqualified(e.op)) {
            reader.error(reader.contentLoc(s->value),
                         "the schema of '" + e.op + "' names '" +
                             parsed.fullName() + "'");
          }
        } catch (const schema::SchemaParseError& err) {
          SourceLoc at = reader.contentLoc(s->value);
          at.column += static_cast<int>(err.column());
          reader.error(at, "malformed schema: " + err.detail());
        }
      }
    } else {
      reader.missingKey("schema", "a lock entry", key_loc);
    }
    if (const auto* c = entry->find("cpp")) {
      if (auto v = reader.fieldString(*c)) e.cpp = *v;
    }
    lock.entries.push_back(std::move(e));
  }
}

}  // namespace

SchemaLock parseLock(std::string_view text, const std::string& path) {
  DiagnosticEngine diags;
  SchemaLock lock;
  readLock(text, path, diags, lock);
  if (diags.hasErrors()) {
    std::ostringstream os;
    diags.print(os);
    std::string msg = os.str();
    while (!msg.empty() && msg.back() == '\n')
      msg.pop_back();
    msg +=
        "\nnote: the lock is written by `accgen generate`; restore it "
        "from version control, or delete it to lock the current schemas";
    throw AccgenError(ExitCode::kInvalidInput, msg);
  }
  std::sort(lock.entries.begin(), lock.entries.end(),
            [](const LockEntry& a, const LockEntry& b) { return a.op < b.op; });
  return lock;
}

std::string_view lockStatusName(LockStatus status) {
  switch (status) {
    case LockStatus::kUnchanged:
      return "unchanged";
    case LockStatus::kChanged:
      return "changed";
    case LockStatus::kAdded:
      return "added";
    case LockStatus::kRemoved:
      return "removed";
  }
  return "unchanged";
}

bool LockComparison::drifted() const {
  return !drift().empty();
}

std::vector<const LockDelta*> LockComparison::drift() const {
  std::vector<const LockDelta*> out;
  for (const auto& d : deltas) {
    if (d.status == LockStatus::kChanged && d.needs_action) out.push_back(&d);
  }
  return out;
}

std::vector<std::string> LockComparison::kernelFilesToEdit() const {
  std::set<std::string> files;
  for (const auto* d : drift()) {
    if (d->kernel_edit && !d->kernel_file.empty()) files.insert(d->kernel_file);
  }
  return {files.begin(), files.end()};
}

LockComparison compareLock(const SchemaLock& locked, const SchemaLock& current,
                           const std::vector<RegisteredOp>& ops) {
  LockComparison cmp;
  cmp.locked_torch = locked.torch_version;
  cmp.current_torch = current.torch_version;
  std::map<std::string, const RegisteredOp*> by_name;
  for (const auto& op : ops)
    by_name[op.qualified_name] = &op;

  std::set<std::string> names;
  for (const auto& e : locked.entries)
    names.insert(e.op);
  for (const auto& e : current.entries)
    names.insert(e.op);
  for (const std::string& name : names) {
    const LockEntry* old_e = locked.find(name);
    const LockEntry* new_e = current.find(name);
    auto it = by_name.find(name);
    const RegisteredOp* now = it == by_name.end() ? nullptr : it->second;
    LockDelta d;
    d.op = name;
    if (old_e) {
      d.old_schema = old_e->schema;
      d.lock_loc = old_e->loc;
    }
    if (new_e) d.new_schema = new_e->schema;
    if (now) {
      d.kind = now->kind;
      d.via = now->via;
      d.kernel_file = now->kernel_file;
      d.user_signature = now->user_signature;
    }
    if (!old_e) {
      d.status = LockStatus::kAdded;
    } else if (!new_e) {
      d.status = LockStatus::kRemoved;
    } else if (old_e->schema == new_e->schema) {
      d.status = LockStatus::kUnchanged;  // the same text: nothing to parse
    } else {
      schema::FunctionSchema old_schema, new_schema;
      schema::CppSignature old_sig, new_sig;
      d.old_cpp = cppFor(old_e->schema, now, &old_sig, &old_schema);
      d.new_cpp = cppFor(new_e->schema, now, &new_sig, &new_schema);
      if (now && now->user_signature) d.new_cpp = now->cppDecl();
      if (d.old_cpp.empty() && !old_e->cpp.empty()) d.old_cpp = old_e->cpp;
      if (old_schema.name.empty() || new_schema.name.empty()) {
        // parseLock rejects unparsable schemas; a current schema always
        // parsed. Compare text as a last resort.
        d.changes = {};
        d.status = old_e->schema == new_e->schema ? LockStatus::kUnchanged
                                                  : LockStatus::kChanged;
        d.needs_action = d.status == LockStatus::kChanged;
      } else {
        d.changes = diffSchema(old_schema, new_schema);
        d.status =
            d.changes.empty() ? LockStatus::kUnchanged : LockStatus::kChanged;
        d.needs_action = needsAction(d.changes);
        // The user's body only has to change when they wrote one.
        d.kernel_edit = now && now->user_signature && d.needs_action &&
                        needsKernelEdit(old_sig, new_sig, d.changes);
      }
    }
    cmp.deltas.push_back(std::move(d));
  }
  return cmp;
}

std::string formatDriftReport(const LockComparison& cmp,
                              const std::string& lock_path, bool accepted) {
  const auto drift = cmp.drift();
  std::ostringstream os;
  os << lock_path << (accepted ? ": note: accepting" : ": error:")
     << " the changed schemas of " << drift.size()
     << (drift.size() == 1 ? " locked operator" : " locked operators")
     << " (locked with torch "
     << (cmp.locked_torch.empty() ? "?" : cmp.locked_torch) << ", now torch "
     << (cmp.current_torch.empty() ? "?" : cmp.current_torch) << ")"
     << (accepted ? "" : "; nothing was written") << "\n";
  for (const LockDelta* d : drift) {
    SourceLoc at = d->lock_loc;
    if (at.file.empty()) at.file = lock_path;
    os << "\n" << at.str() << ": " << d->op << " [" << d->kind;
    if (d->via != d->op && unqualified(d->op) != d->via) {
      os << " via " << d->via;
    }
    os << "]";
    if (d->kernel_edit) {
      os << ": edit " << d->kernel_file;
    } else if (d->user_signature) {
      os << ": " << d->kernel_file << " needs no edit (same C++ types)";
    } else if (!d->kernel_file.empty()) {
      os << ": " << d->kernel_file << " needs no edit (generated code adapts)";
    } else {
      os << ": generated code only";
    }
    os << "\n";
    for (const Change& c : d->changes) {
      os << "    " << changeClassName(c.cls) << ": " << c.detail << "\n";
    }
    os << "    schema locked: " << d->old_schema << "\n";
    os << "              now: " << d->new_schema << "\n";
    if (d->user_signature) {
      os << "    C++    locked: " << d->old_cpp << "\n";
      os << "              now: " << d->new_cpp << "\n";
    }
  }
  const auto files = cmp.kernelFilesToEdit();
  os << "\n";
  if (files.empty()) {
    os << "note: no user kernel file needs an edit; the generated code "
          "follows the new schemas\n";
  } else {
    os << "note: user kernel files to edit (" << files.size() << "):";
    for (const auto& f : files)
      os << " " << f;
    os << "\n";
  }
  if (!accepted) {
    os << "note: accept the new schemas with `accgen generate --update-lock`; "
          "`accgen schema-diff OLD NEW --specs DIR` shows every change "
          "between two releases\n";
  }
  return os.str();
}

ExitCode LockPlan::exitCode() const {
  return action == Action::kRefuse ? ExitCode::kSchemaDrift : ExitCode::kOk;
}

LockPlan planLock(const model::Backend& backend,
                  const std::string& torch_version, bool update_lock) {
  LockPlan plan;
  plan.path = (fs::path(backend.specDir()) / kLockFileName).string();
  const auto ops = registeredOps(backend);
  const SchemaLock current = buildLock(ops, torch_version);
  plan.text = renderLock(current);
  InputFile file = readInputFile(plan.path);
  if (file.status == InputFile::Status::kError) {
    throw AccgenError(
        ExitCode::kInvalidInput,
        plan.path + ": error: " + file.error +
            "\nnote: the lock is written by `accgen generate`; restore it "
            "from version control, or delete it to lock the current schemas");
  }
  std::optional<std::string> existing;
  if (file.status == InputFile::Status::kRead) existing = std::move(file.text);
  if (!existing) {
    plan.action = LockPlan::Action::kCreate;
    plan.comparison = compareLock(SchemaLock{}, current, ops);
    return plan;
  }
  plan.old_text = *existing;
  if (plan.old_text == plan.text) {
    // The common no-op run: the lock is exactly what it would become, so
    // nothing changed and nothing needs parsing (it costs ~5 ms).
    plan.action = LockPlan::Action::kKeep;
    return plan;
  }
  const SchemaLock locked = parseLock(*existing, plan.path);
  plan.comparison = compareLock(locked, current, ops);
  if (plan.comparison.drifted()) {
    plan.report = formatDriftReport(plan.comparison, plan.path, update_lock);
    if (!update_lock) {
      plan.action = LockPlan::Action::kRefuse;
      return plan;
    }
  } else {
    int added = 0, removed = 0, absorbed = 0;
    for (const auto& d : plan.comparison.deltas) {
      added += d.status == LockStatus::kAdded;
      removed += d.status == LockStatus::kRemoved;
      absorbed += d.status == LockStatus::kChanged;
    }
    std::ostringstream os;
    if (added)
      os << plan.path << ": note: " << added
         << " operator(s) added to the lock\n";
    if (removed)
      os << plan.path << ": note: " << removed
         << " operator(s) no longer registered, dropped from the lock\n";
    if (absorbed)
      os << plan.path << ": note: " << absorbed
         << " operator(s) changed only in default values (no action needed)\n";
    plan.report = os.str();
  }
  plan.action = plan.old_text == plan.text ? LockPlan::Action::kKeep
                                           : LockPlan::Action::kUpdate;
  return plan;
}

void commitLock(const LockPlan& plan) {
  if (plan.action != LockPlan::Action::kCreate &&
      plan.action != LockPlan::Action::kUpdate) {
    return;
  }
  const fs::path path(plan.path);
  const fs::path tmp = path.parent_path() / kLockTempFileName;
  // A file system error here is the machine's, not a bug: exit 6.
  auto fail = [&](const std::string& what, const std::string& why) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw AccgenError(ExitCode::kFileSystem,
                      path.string() + ": error: cannot " + what + ": " + why);
  };
  std::error_code ec;
  fs::remove(tmp, ec);  // a stray one from an interrupted run, or a link
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << plan.text;
    out.flush();
    if (!out) fail("write '" + tmp.string() + "'", std::strerror(errno));
  }
  fs::rename(tmp, path, ec);
  if (ec) fail("replace it with '" + tmp.string() + "'", ec.message());
}

}  // namespace accgen::upgrade
