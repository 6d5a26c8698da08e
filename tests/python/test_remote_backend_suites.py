"""The longer suites of the example ported to the remote driver
(examples/remote, remote_backend.py), apart from test_remote_backend.py so
that two test workers share them: the port's generated conformance suite,
and the collectives and a DDP step in two rank processes, each with its own
device process."""
import pytest


def test_the_generated_conformance_suite_passes(remote_backend):
    """The suite accgen generated for the port (its tests/conformance),
    run as the backend's own CI would: every family passes or says why it
    does not apply."""
    import os
    import subprocess
    import sys

    project = remote_backend.parent / "raccel"
    env = dict(os.environ, PYTHONPATH=str(remote_backend),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    r = subprocess.run(
        [sys.executable, "-c", "import torch_raccel, sys, pytest\n"
         "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-n', '2', "
         "'tests/conformance']))"],
        capture_output=True, text=True, env=env, cwd=str(project), timeout=1500)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and " failed" not in r.stdout, r.stdout[-2000:]


@pytest.mark.parametrize("scenario", ["collectives", "ddp"])
def test_distributed_through_staged_collectives(remote_backend, scenario):
    """Two rank processes, each with its own device process, run the
    scenarios of distributed_ranks.py through the staged collectives (Note
    [Staged collectives] in runtime/src/GlooCollectives.cpp), checked
    against the CPU."""
    from test_distributed import run_ranks

    run_ranks("raccel", "torch_raccel", scenario, timeout=300,
              env={"PYTHONPATH": str(remote_backend),
                   "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})


def test_the_port_matches_its_published_report(remote_backend, tmp_path):
    """The port's whole report, diffed against docs/reports/data/
    (published_reports.py): on the remote driver the survey is the work
    list, and a move of an operator off the device fails here by name."""
    from published_reports import check_published

    import json

    check_published("raccel", "torch_raccel", tmp_path,
                    env={"PYTHONPATH": str(remote_backend),
                         "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    # atan2 is left to `fallback: cpu`: each call copies its arguments to
    # the host and its result back, and the report says how much.
    assert report["operators"]["aten::atan2.out"]["path"] == "cpu fallback"
    cell = report["numerics"]["atan2"]["dtypes"]["float32"]
    assert cell["fallback_calls"]["cpu"] >= 1, cell
    assert cell["copied_bytes"]["device_to_host"] > 0, cell
    assert cell["copied_bytes"]["host_to_device"] > 0, cell
