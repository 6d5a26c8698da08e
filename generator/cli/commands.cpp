// The subcommands. Each parses its options with CLI11, runs the pipeline and
// returns an exit code; user errors travel as AccgenError to main.
#include "generator/cli/commands.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "generator/cli/generate.h"
#include "generator/cli/init.h"
#include "generator/cli/inspect.h"
#include "generator/cli/pipeline.h"
#include "generator/support/diagnostics.h"
#include "generator/upgrade/lock.h"
#include "generator/upgrade/schema_diff.h"
#include "generator/upgrade/user_kernels.h"

namespace accgen::cli {
namespace {

int runValidate(const std::string& specs, const std::string& out,
                const std::string& schemas_file) {
  const SchemaLocation where = locateSchemas(schemas_file);
  warnIfUnsupportedTorch(where, std::cerr);
  SchemaSource schemas = loadSchemas(where);
  model::Backend backend = loadBackend(specs, schemas, std::cerr);
  // What `generate` would refuse, validate reports: a lock it cannot read
  // (exit 3) or locked schemas that changed (exit 5).
  const upgrade::LockPlan lock =
      upgrade::planLock(backend, schemas.torch_version, /*update_lock=*/false);
  if (lock.action == upgrade::LockPlan::Action::kRefuse) {
    std::cerr << lock.report;
    return static_cast<int>(lock.exitCode());
  }
  // User kernels that no longer match their operator fail validation.
  auto kernels = upgrade::checkUserKernels(backend, out, Severity::kError);
  printDiagnostics(kernels, std::cerr);
  printDiagnostics(upgrade::findOrphanedKernels(backend, out), std::cerr);
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
  if (*generate) return runGenerate(gen, std::cout, std::cerr);
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
