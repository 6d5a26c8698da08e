// The subcommands. Each parses its options with CLI11, runs the pipeline and
// returns an exit code; user errors travel as AccgenError to main.
#include "generator/cli/commands.h"

#include <exception>
#include <filesystem>
#include <future>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "generator/cli/init.h"
#include "generator/cli/inspect.h"
#include "generator/cli/pipeline.h"
#include "generator/cli/torch_cache.h"
#include "generator/support/diagnostics.h"
#include "generator/upgrade/lock.h"
#include "generator/upgrade/schema_diff.h"
#include "generator/upgrade/user_kernels.h"

namespace accgen::cli {
namespace {

namespace fs = std::filesystem;

struct GenerateOptions {
  std::string specs = "specs";
  std::string out = ".";
  std::string schemas;
  bool force = false;
  bool check = false;
  bool update_lock = false;
};

/// The command line that regenerates `options.out`, for messages.
std::string regenerateCommand(const GenerateOptions& o) {
  std::string cmd = "accgen generate";
  if (o.specs != "specs") cmd += " --specs " + o.specs;
  if (o.out != ".") cmd += " --out " + o.out;
  if (!o.schemas.empty()) cmd += " --schemas " + o.schemas;
  return cmd;
}

/// Prints `diags` (warnings about user kernels) on stderr.
void printDiagnostics(const std::vector<Diagnostic>& diags) {
  for (const auto& d : diags)
    std::cerr << d.format();
}

int runGenerate(const GenerateOptions& o) {
  // Note [Input fingerprint]: a tree generated from exactly these inputs,
  // untouched since, needs no rendering at all. Without a manifest to
  // compare with (a new tree), or when the comparison is not wanted, the
  // fingerprint is only recorded: it is computed while the schemas and specs
  // load.
  std::string inputs;
  std::future<std::string> later_inputs;
  if (o.schemas.empty() || fs::is_regular_file(o.schemas)) {
    std::string schema_file = o.schemas, version;
    if (schema_file.empty()) {
      TorchFacts facts = findTorchCached();
      schema_file = facts.install.native_functions_yaml;
      version = facts.install.version;
    }
    auto fingerprint = [o, schema_file, version] {
      return inputFingerprint(o.specs, o.out, schema_file, version,
                              render::defaultTemplateDir());
    };
    if (!o.check && !o.force && !o.update_lock &&
        fs::exists(fs::path(o.out) / write::kManifestName)) {
      inputs = fingerprint();
      if (auto report = write::currentTree(o.out, inputs)) {
        std::cout << report->summary() << "\n";
        return static_cast<int>(ExitCode::kOk);
      }
    } else {
      later_inputs = std::async(std::launch::async, fingerprint);
    }
  }

  SchemaSource schemas = loadSchemas(o.schemas);
  model::Backend backend = loadBackend(o.specs, schemas, std::cerr);
  if (later_inputs.valid()) inputs = later_inputs.get();
  emit::RunInfo run{schemas.torch_version, inputs};

  // Note [Schema lock]: locked operators whose schemas changed stop the run
  // before anything is written, unless --update-lock accepts them. The lock
  // is planned while the backend renders; a refusal wins over any error
  // rendering found.
  auto planned = std::async(std::launch::async, [&] {
    return upgrade::planLock(backend, run.torch_version, o.update_lock);
  });
  render::TemplateSet templates(render::defaultTemplateDir());
  std::vector<write::RenderedFile> files;
  std::exception_ptr render_error;
  try {
    files = renderBackend(backend, run, templates, o.out);
  } catch (...) {
    render_error = std::current_exception();
  }
  upgrade::LockPlan lock = planned.get();
  if (lock.action == upgrade::LockPlan::Action::kRefuse) {
    std::cerr << lock.report;
    return static_cast<int>(lock.exitCode());
  }
  if (render_error) std::rethrow_exception(render_error);

  if (o.check) {
    auto diffs = write::checkTree(o.out, files, manifestExtra(run));
    if (lock.action != upgrade::LockPlan::Action::kKeep) {
      std::string rel = fs::relative(lock.path, o.out).generic_string();
      diffs.push_back(write::unifiedDiff(
          lock.old_text, lock.text,
          lock.old_text.empty() ? "/dev/null" : "a/" + rel, "b/" + rel));
    }
    if (diffs.empty()) {
      std::cout << o.out << " is up to date with " << o.specs << "\n";
      return static_cast<int>(ExitCode::kOk);
    }
    for (const auto& d : diffs)
      std::cout << d;
    std::cerr << "error: " << diffs.size() << " generated file"
              << (diffs.size() == 1 ? "" : "s") << " in " << o.out
              << " differ from what " << o.specs
              << " produces; regenerate with: " << regenerateCommand(o) << "\n";
    return static_cast<int>(ExitCode::kCheckDiff);
  }

  // User kernels are checked before writing, which never changes one: the
  // files this run creates come from their starters, with the signatures
  // the check would expect, and are skipped as not there yet.
  auto kernel_diags =
      upgrade::checkUserKernels(backend, o.out, Severity::kWarning);
  auto orphans = upgrade::findOrphanedKernels(backend, o.out);
  // Nothing uses the backend and the schemas past this point: a second
  // thread releases them (thousands of operators' worth of small objects)
  // while this one writes the files.
  std::jthread release(
      [backend = std::move(backend), schemas = std::move(schemas)] {});
  auto report = write::writeTree(
      o.out, files, {.force = o.force, .manifest_extra = manifestExtra(run)});
  if (report.refused()) {
    for (const auto& path : report.edited) {
      std::cerr << (fs::path(o.out) / path).lexically_normal().string()
                << ": error: generated file was edited by hand; not "
                   "overwritten\n";
    }
    std::cerr << "note: move your changes into the specs or a kernels/ "
                 "file, or rerun with --force to discard them; nothing was "
                 "written\n";
    return static_cast<int>(ExitCode::kRefusedOverwrite);
  }
  upgrade::commitLock(lock);
  if (!lock.report.empty()) std::cerr << lock.report;
  printDiagnostics(kernel_diags);
  printDiagnostics(orphans);
  std::cout << report.summary() << "\n";
  return static_cast<int>(ExitCode::kOk);
}

int runValidate(const std::string& specs, const std::string& out,
                const std::string& schemas_file) {
  SchemaSource schemas = loadSchemas(schemas_file);
  model::Backend backend = loadBackend(specs, schemas, std::cerr);
  // User kernels that no longer match their operator fail validation.
  auto kernels = upgrade::checkUserKernels(backend, out, Severity::kError);
  printDiagnostics(kernels);
  printDiagnostics(upgrade::findOrphanedKernels(backend, out));
  if (!kernels.empty()) {
    throw AccgenError(ExitCode::kInvalidInput,
                      std::to_string(kernels.size()) +
                          " user kernel(s) do not match their operators");
  }
  return static_cast<int>(ExitCode::kOk);
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "accgen: generates a complete PyTorch backend on the PrivateUse1 key "
      "from YAML specs",
      "accgen"};
  app.set_version_flag("--version", std::string("accgen ") + ACCGEN_VERSION);
  app.require_subcommand(1);

  InitOptions init_options;
  auto* init = app.add_subcommand(
      "init", "Create a backend project that builds and runs as it is");
  init->add_option("name", init_options.name,
                   "Device name (a lower-case Python identifier)")
      ->required();
  init->add_option("--dir", init_options.dir,
                   "Project directory (default: ./NAME); must be empty");
  init->add_option("--schemas", init_options.schemas,
                   "native_functions.yaml to use instead of the installed "
                   "torch's");

  GenerateOptions gen;
  auto* generate = app.add_subcommand(
      "generate", "Render the backend; write only what changed");
  generate->add_option("--specs", gen.specs, "Spec directory")
      ->capture_default_str();
  generate->add_option("--out", gen.out, "Output directory")
      ->capture_default_str();
  generate->add_option("--schemas", gen.schemas,
                       "native_functions.yaml or torch version to use "
                       "instead of the installed torch's");
  generate->add_flag("--force", gen.force,
                     "Overwrite generated files that were edited by hand");
  generate->add_flag("--check", gen.check,
                     "Compare with the tree on disk; print a diff; write "
                     "nothing");
  generate->add_flag("--update-lock", gen.update_lock,
                     "Accept schema changes of locked operators");

  std::string validate_specs = "specs", validate_out = ".", validate_schemas;
  auto* validate =
      app.add_subcommand("validate", "Validate the specs; print errors only");
  validate->add_option("--specs", validate_specs, "Spec directory")
      ->capture_default_str();
  validate
      ->add_option("--out", validate_out,
                   "Project directory holding kernels/ (user kernels "
                   "are checked against their operators)")
      ->capture_default_str();
  validate->add_option("--schemas", validate_schemas,
                       "native_functions.yaml or torch version to validate "
                       "against");

  upgrade::SchemaDiffOptions diff_options;
  std::string diff_specs;
  auto* schema_diff = app.add_subcommand(
      "schema-diff",
      "Compare two native_functions.yaml (or torch versions); report what "
      "changed for this backend");
  schema_diff
      ->add_option("old", diff_options.old_source,
                   "Old schemas: native_functions.yaml or a torch "
                   "version")
      ->required();
  schema_diff
      ->add_option("new", diff_options.new_source,
                   "New schemas: native_functions.yaml or a torch "
                   "version")
      ->required();
  schema_diff->add_option("--specs", diff_specs,
                          "Spec directory: report what this backend must "
                          "change");
  schema_diff->add_option("--wheels", diff_options.wheels_dir,
                          "Directory of torch wheels for version arguments "
                          "(default: $ACCGEN_WHEEL_DIR)");
  schema_diff->add_flag("--json", diff_options.json, "JSON output for tools");

  InspectOptions inspect_options;
  auto* inspect = app.add_subcommand(
      "inspect", "Show an operator's schema, C++ signature and registration");
  inspect
      ->add_option("operator", inspect_options.op,
                   "Operator: name.overload, name, or ns::name")
      ->required();
  inspect->add_option("--specs", inspect_options.specs, "Spec directory")
      ->capture_default_str();
  inspect->add_option("--schemas", inspect_options.schemas,
                      "native_functions.yaml to read");
  inspect->add_flag("--json", inspect_options.json, "JSON output for tools");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return static_cast<int>(ExitCode::kUsage);
  }

  if (*init) return runInit(init_options, std::cout, std::cerr);
  if (*generate) return runGenerate(gen);
  if (*validate) {
    return runValidate(validate_specs, validate_out, validate_schemas);
  }
  if (*schema_diff) {
    if (!diff_specs.empty()) diff_options.specs_dir = diff_specs;
    return upgrade::runSchemaDiff(diff_options, std::cout, std::cerr);
  }
  if (*inspect) return runInspect(inspect_options, std::cout, std::cerr);
  return static_cast<int>(ExitCode::kUsage);
}

}  // namespace accgen::cli
