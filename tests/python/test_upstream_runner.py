"""The upstream test runner (tests/upstream/run.py of a backend, Note
[Upstream test runner] in runtime/python/_upstream.py), driven on small
device-generic files written for it (tests/upstream_fixture/): a test that
passes, device-only failures with one cause, a failure on both, a skip, an
undeclared dtype, a hang, and a regression switched on by the test."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "upstream_fixture"


@pytest.fixture
def run(mod):
    runner = ROOT / "generated_example" / "tests" / "upstream" / "run.py"
    if mod.__name__ != "torch_accel":
        pytest.skip("drives the example's runner")

    def run_(*args, env=None):
        return subprocess.run(
            [sys.executable, str(runner), "--pytorch-tests", str(FIXTURE), *args],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, **(env or {})})
    return run_


def test_device_tests_are_classed_against_their_cpu_twins(run, device, tmp_path):
    report_path = tmp_path / "report.json"
    r = run("--files", "generic_sample.py", "generic_second.py",
            "--per-test-timeout", "3", "--report", str(report_path))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(report_path.read_text())
    sample = report["files"]["generic_sample.py"]
    assert (sample["device_tests"], sample["passed"], sample["both_failed"],
            sample["skipped"], sample["unclaimed_dtype"], sample["timeouts"]) == (9, 2, 1, 1, 1, 1)
    failed = {f["test"].rsplit("::", 1)[1]: f["cause"] for f in sample["device_only"]}
    assert set(failed) == {f"test_device_only_{device}", f"test_device_only_again_{device}",
                           f"test_dtyped_{device}_float32", f"test_hangs_on_device_{device}"}
    # One cause for the two messages that differ only in numbers.
    assert failed[f"test_device_only_{device}"] == failed[f"test_device_only_again_{device}"] \
        == "RuntimeError: no kernel on <device>:N at N, N bytes"
    assert "per-test timeout" in failed[f"test_hangs_on_device_{device}"]
    assert report["files"]["generic_second.py"]["passed"] == 1
    assert "generic_sample.py: 9 device tests, 2 passed, 4 failed on the device only" in r.stdout
    assert "      2  RuntimeError: no kernel on <device>:N at N, N bytes" in r.stdout


def test_a_baseline_fails_a_later_run_on_a_new_device_only_failure(run, device, tmp_path):
    baseline = tmp_path / "baseline.json"
    select = ("--files", "generic_sample.py", "-k", "device_only or new_failure")
    r = run(*select, "--record-baseline", str(baseline))
    assert r.returncode == 0, r.stdout + r.stderr
    recorded = json.loads(baseline.read_text())["device_only"]
    assert len(recorded) == 2 and all("test_device_only" in t for t in recorded)
    r = run(*select, "--baseline", str(baseline))
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(*select, "--baseline", str(baseline), env={"UPSTREAM_FIXTURE_NEW_FAILURE": "1"})
    assert r.returncode == 1
    assert f"new device-only failure: generic_sample.py::TestSamplePRIVATEUSE1::" \
           f"test_new_failure_{device}" in r.stdout


def test_time_bounds_and_bad_arguments(run, tmp_path):
    report_path = tmp_path / "report.json"
    r = run("--files", "generic_sample.py", "generic_second.py",
            "--per-file-timeout", "2", "--time-budget", "2", "--report", str(report_path))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(report_path.read_text())
    assert report["files"]["generic_sample.py"]["stopped"]
    assert report["not_run"] == ["generic_second.py"]
    assert "not run (time budget spent): generic_second.py" in r.stdout
    r = run("--files", "test_nothing_here.py")
    assert r.returncode == 2 and "not in" in r.stderr and "test_nothing_here.py" in r.stderr
