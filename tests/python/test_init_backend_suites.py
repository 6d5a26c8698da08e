"""The suites the example runs, against an `accgen init` backend (the
session's second_backend, built once per run: conftest.py): torch's models
and OpInfo database, torch.distributed, the project's own smoke tests and
its generated conformance suite. A file of their own, so that a second test
worker runs them beside test_init_backend.py.
"""
import pytest

from init_backend import ACCGEN, PREFIX, drive, run_suites_on

pytestmark = pytest.mark.skipif(
    not ACCGEN or not PREFIX,
    reason="set ACCGEN_BIN and ACCGEN_PREFIX (scripts/test.sh does) to build "
    "an init-generated backend")


def test_models_and_opinfo_sweep_on_the_init_backend(second_backend):
    # The suites the example runs, against the freshly initialised backend.
    run_suites_on(second_backend, ("test_models.py", "test_opinfo_sweep.py",
                                    "test_hook_ops.py", "test_memory_tools.py",
                                    "test_graphs.py",
                                    "test_structured_loops.py"))


def test_distributed_on_the_init_backend(second_backend):
    # torch.distributed on the freshly initialised backend: its c10d backend
    # is registered, and two ranks run the collectives and a DDP step.
    run_suites_on(second_backend, ("test_distributed.py",),
                   "-k", "registered or collectives or ddp_training")


def test_project_tests_pass(second_backend):
    # The project's README command, `python -m pytest tests`, sharded over
    # the backend's two devices (`-n 2`, as its CI runs it): the smoke test
    # `accgen init` wrote and the conformance suite `accgen generate` keeps
    # in tests/conformance/, against the built backend (loaded explicitly
    # first, since autoload is off here).
    project = second_backend.parent / "second"
    assert (project / "tests" / "test_second.py").is_file()
    assert (project / "tests" / "conformance" / "backend_spec.py").is_file()
    r = drive(second_backend, f"""
        import sys, pytest
        sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-n", "2",
                              {str(project / "tests")!r}]))
    """)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    summary = r.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary, summary
    print(f"init backend tests: {summary}")


def test_library_adapters_on_the_init_backend(second_backend):
    # The adapters are the runtime's, made from the specs alone: DeepSpeed
    # and Lightning find the freshly initialised device by its name, and
    # transformers' tests run on it through the spec file it ships.
    run_suites_on(second_backend, ("test_integrations.py",),
                  "-k", "load_no_library or selects_the_device or runs_on_the_device "
                  "or finds_the_device_by_name or more_devices_than_exist")


def test_the_report_runs_on_the_init_backend(second_backend, tmp_path):
    # The report every backend ships, on a backend made by `accgen init`
    # alone: its survey finds the paths its specs give, and every capability
    # passes or says why it does not apply.
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(second_backend),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    r = subprocess.run(
        [sys.executable, "-m", "torch_second.report", "--out", "report",
         "--dtypes", "float32"],
        capture_output=True, text=True, env=env, cwd=str(tmp_path),
        timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["backend"]["device"] == "second"
    paths = {row["path"] for row in report["operators"].values()}
    assert {"builtin", "emulate", "emulate fallback", "composite"} <= paths, paths
    failed = {name: row["reason"] for name, row in report["capabilities"].items()
              if row["status"] == "failed"}
    assert not failed, failed
    f32 = report["summary"]["numerics"]["by_dtype"]["float32"]
    assert f32["strict"] > 500, f32
