// `accgen generate` as a pipeline. The stages, in the order a run takes
// them, and the layer each one works in:
//
//   locateSchemas               which schemas, resolved once (pipeline)
//   skipIfCurrent               the fast path: write::currentTree
//   loadSchemas, loadBackend    schemas, specs, the backend model (pipeline)
//   renderLocked                upgrade::planLock beside renderBackend
//   reportDifferences           --check: write::checkTree; nothing written
//   checkKernels                upgrade::checkUserKernels and
//                               findOrphanedKernels
//   inputsAfterWriting          the fingerprint the manifest records
//   writeGenerated              write::writeTree, then upgrade::commitLock
#include "generator/cli/generate.h"

#include <exception>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "generator/render/renderer.h"
#include "generator/support/diagnostics.h"
#include "generator/support/io.h"
#include "generator/upgrade/lock.h"
#include "generator/upgrade/user_kernels.h"
#include "generator/write/writer.h"

namespace accgen::cli {
namespace {

namespace fs = std::filesystem;

// The input fingerprint of a run (Note [Input fingerprint] in writer.h):
// known already, still being computed on a second thread, or none (the
// schemas are a torch version, which is not fingerprinted).
struct PendingInputs {
  std::string value;
  std::future<std::string> later;

  std::string get() {
    if (later.valid()) value = later.get();
    return value;
  }
};

// Note [Input fingerprint]: a tree generated from exactly these inputs,
// untouched since, needs no rendering at all; its report is returned then.
// Without a manifest to compare with (a new tree), or when the comparison
// is not wanted, the fingerprint is only recorded: `inputs` gets it from a
// second thread while the schemas and specs load.
std::optional<write::WriteReport> skipIfCurrent(const GenerateOptions& o,
                                                const SchemaLocation& where,
                                                PendingInputs& inputs) {
  if (!where.fingerprinted()) return std::nullopt;
  auto fingerprint = [specs = o.specs, out = o.out,
                      file = where.fingerprint_file,
                      version = where.fingerprint_version] {
    return inputFingerprint(specs, out, file, version,
                            render::defaultTemplateDir());
  };
  if (!o.check && !o.force && !o.update_lock &&
      fs::exists(fs::path(o.out) / write::kManifestName)) {
    inputs.value = fingerprint();
    return write::currentTree(o.out, inputs.value);
  }
  inputs.later = std::async(std::launch::async, fingerprint);
  return std::nullopt;
}

/// The rendered tree and what becomes of the lock.
struct Rendered {
  std::vector<write::RenderedFile> files;
  upgrade::LockPlan lock;
};

// Note [Schema lock]
// ~~~~~~~~~~~~~~~~~~
// Locked operators whose schemas changed stop the run before anything is
// written, unless --update-lock accepts them. The lock is planned while
// the backend renders; a refusal wins over any error rendering found (the
// caller stops at lock.action == kRefuse, and `files` is empty then).
Rendered renderLocked(const model::Backend& backend, const emit::RunInfo& run,
                      const GenerateOptions& o) {
  auto planned = std::async(std::launch::async, [&] {
    return upgrade::planLock(backend, run.torch_version, o.update_lock);
  });
  render::TemplateSet templates(render::defaultTemplateDir());
  Rendered r;
  std::exception_ptr render_error;
  try {
    r.files = renderBackend(backend, run, templates, o.out);
  } catch (...) {
    render_error = std::current_exception();
  }
  r.lock = planned.get();
  if (r.lock.action == upgrade::LockPlan::Action::kRefuse) {
    r.files.clear();
    return r;
  }
  if (render_error) std::rethrow_exception(render_error);
  return r;
}

// --check: every difference between the rendered tree (with the lock) and
// the one on disk, as unified diffs; writes nothing.
int reportDifferences(const GenerateOptions& o, const Rendered& r,
                      const emit::RunInfo& run, std::ostream& out,
                      std::ostream& err) {
  auto diffs = write::checkTree(o.out, r.files, manifestExtra(run));
  if (r.lock.action != upgrade::LockPlan::Action::kKeep) {
    std::string rel = fs::relative(r.lock.path, o.out).generic_string();
    diffs.push_back(write::unifiedDiff(
        r.lock.old_text, r.lock.text,
        r.lock.old_text.empty() ? "/dev/null" : "a/" + rel, "b/" + rel));
  }
  if (diffs.empty()) {
    out << o.out << " is up to date with " << o.specs << "\n";
    return static_cast<int>(ExitCode::kOk);
  }
  for (const auto& d : diffs)
    out << d;
  err << "error: " << diffs.size() << " generated file"
      << (diffs.size() == 1 ? "" : "s") << " in " << o.out
      << " differ from what " << o.specs
      << " produces; regenerate with: " << regenerateCommand(o) << "\n";
  return static_cast<int>(ExitCode::kCheckDiff);
}

/// Warnings about user kernels, printed once the tree is written.
struct KernelReport {
  std::vector<Diagnostic> mismatched;
  std::vector<Diagnostic> orphaned;
};

// User kernels are checked before writing, which never changes one: the
// files this run creates come from their starters, with the signatures
// the check would expect, and are skipped as not there yet.
KernelReport checkKernels(const model::Backend& backend,
                          const GenerateOptions& o) {
  return {upgrade::checkUserKernels(backend, o.out, Severity::kWarning),
          upgrade::findOrphanedKernels(backend, o.out)};
}

// The fingerprint the manifest records: that of the inputs as this run
// leaves them. The lock it creates or updates and the user kernels it
// creates are inputs too; fingerprinted as they were before the run, they
// would make the next run find the manifest stale, render again and
// rewrite the manifest, and make --check report it.
std::string inputsAfterWriting(const GenerateOptions& o,
                               const SchemaLocation& where, const Rendered& r,
                               const std::string& inputs) {
  if (inputs.empty()) return inputs;  // not fingerprinted
  PendingInputFiles pending;
  if (r.lock.action == upgrade::LockPlan::Action::kCreate ||
      r.lock.action == upgrade::LockPlan::Action::kUpdate) {
    pending.specs[fs::path(r.lock.path).filename().string()] = r.lock.text;
  }
  // After a killed run (Note [Interrupted runs] in writer.cpp) a starter it
  // left half-written is made again, and fingerprinted as made.
  const bool interrupted = fs::exists(fs::path(o.out) / write::kJournalName);
  for (const auto& f : r.files) {
    const fs::path path(f.path);
    if (!f.user_owned || path.parent_path() != "kernels") continue;
    const fs::path on_disk_path = fs::path(o.out) / path;
    bool pending_file = !fs::exists(on_disk_path);
    if (!pending_file && interrupted) {
      auto on_disk = readFile(on_disk_path.string());
      pending_file =
          on_disk && *on_disk != f.content && f.content.starts_with(*on_disk);
    }
    if (pending_file) pending.kernels[path.filename().string()] = f.content;
  }
  if (pending.empty()) return inputs;
  return inputFingerprint(o.specs, o.out, where.fingerprint_file,
                          where.fingerprint_version,
                          render::defaultTemplateDir(), pending);
}

// The tree (the writer refuses hand-edited files unless --force), then the
// lock, then what the run has to say about the lock and the user kernels.
GenerateOutcome writeGenerated(const GenerateOptions& o, const Rendered& r,
                               const emit::RunInfo& run,
                               const KernelReport& kernels, std::ostream& err) {
  auto report = write::writeTree(o.out, r.files,
                                 {.force = o.force,
                                  .specs_dir = o.specs,
                                  .manifest_extra = manifestExtra(run)});
  if (report.refused()) {
    for (const auto& path : report.edited) {
      err << (fs::path(o.out) / path).lexically_normal().string()
          << ": error: generated file was edited by hand; not "
             "overwritten\n";
    }
    err << "note: move your changes into the specs or a kernels/ "
           "file, or rerun with --force to discard them; nothing was "
           "written\n";
    return {static_cast<int>(ExitCode::kRefusedOverwrite), std::nullopt};
  }
  upgrade::commitLock(r.lock);
  if (!r.lock.report.empty()) err << r.lock.report;
  printDiagnostics(kernels.mismatched, err);
  printDiagnostics(kernels.orphaned, err);
  return {static_cast<int>(ExitCode::kOk), std::move(report)};
}

// Every stage after the fast path.
GenerateOutcome renderAndWrite(const GenerateOptions& o,
                               const SchemaLocation& where,
                               PendingInputs inputs, std::ostream& out,
                               std::ostream& err) {
  SchemaSource schemas = loadSchemas(where);
  model::Backend backend = loadBackend(o.specs, schemas, err);
  const emit::RunInfo run{schemas.torch_version, inputs.get()};

  Rendered rendered = renderLocked(backend, run, o);
  if (rendered.lock.action == upgrade::LockPlan::Action::kRefuse) {
    err << rendered.lock.report;
    return {static_cast<int>(rendered.lock.exitCode()), std::nullopt};
  }
  if (o.check) {
    return {reportDifferences(o, rendered, run, out, err), std::nullopt};
  }
  const KernelReport kernels = checkKernels(backend, o);
  // Nothing uses the backend and the schemas past this point: a second
  // thread releases them (thousands of operators' worth of small objects)
  // while this one writes the files.
  std::jthread release(
      [backend = std::move(backend), schemas = std::move(schemas)] {});
  emit::RunInfo after = run;
  after.inputs = inputsAfterWriting(o, where, rendered, run.inputs);
  return writeGenerated(o, rendered, after, kernels, err);
}

}  // namespace

std::string regenerateCommand(const GenerateOptions& o) {
  std::string cmd = "accgen generate";
  if (o.specs != "specs") cmd += " --specs " + o.specs;
  if (o.out != ".") cmd += " --out " + o.out;
  if (!o.schemas.empty()) cmd += " --schemas " + o.schemas;
  return cmd;
}

GenerateOutcome generate(const GenerateOptions& o, const SchemaLocation& where,
                         std::ostream& out, std::ostream& err) {
  warnIfUnsupportedTorch(where, err);
  PendingInputs inputs;
  if (auto report = skipIfCurrent(o, where, inputs)) {
    return {static_cast<int>(ExitCode::kOk), std::move(report)};
  }
  return renderAndWrite(o, where, std::move(inputs), out, err);
}

int runGenerate(const GenerateOptions& o, std::ostream& out,
                std::ostream& err) {
  GenerateOutcome outcome = generate(o, locateSchemas(o.schemas), out, err);
  if (outcome.written) out << outcome.written->summary() << "\n";
  return outcome.exit_code;
}

}  // namespace accgen::cli
