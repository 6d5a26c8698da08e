"""Runs PyTorch's own device-generic tests against a backend, for vendors.

Installed in every backend's package as ``_upstream``; each backend's
generated ``tests/upstream/run.py`` calls :func:`main` with its specs
(``tests/conformance/backend_spec.py``). accgen cannot ship PyTorch's test
files: the vendor points the runner at the ``test/`` directory of a PyTorch
checkout at their torch's release tag.

# --8<-- [start:upstream-note]
Note [Upstream test runner]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each file runs in a pytest process of its own, with torch's device-type
framework instantiating its tests for the CPU and the device
(``PYTORCH_TESTING_DEVICE_ONLY_FOR=cpu,privateuse1``), so every device test
has a CPU twin in the same run. This module is also the pytest plugin of
those processes: it records each test's outcome and the last line of its
error as it happens (a file killed at its time bound keeps what it
reported), and bounds each test with a timer. Then each device test is
classed: passed; failed on the device only (its CPU twin passed), grouped
by cause (the error with numbers, addresses and device names taken out);
failed on both; skipped; or over a dtype the specs do not declare, which is
reported apart, not as a failure. A baseline records the device-only
failures; a later run fails on any that is not in it.
# --8<-- [end:upstream-note]
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any, Optional

_RESULTS_ENV = "ACCGEN_UPSTREAM_RESULTS"
_TIMEOUT_ENV = "ACCGEN_UPSTREAM_TEST_TIMEOUT"

#: The device-generic files of PyTorch's test/ that a run covers by default.
DEFAULT_FILES = (
    "test_ops.py", "test_view_ops.py", "test_indexing.py", "test_reductions.py",
    "test_shape_ops.py", "test_torch.py", "test_nn.py", "test_binary_ufuncs.py",
    "test_unary_ufuncs.py", "test_autograd.py", "test_sort_and_select.py",
    "test_tensor_creation_ops.py", "test_type_promotion.py", "test_linalg.py",
)

# ------------------------------------------------------------ pytest plugin


def _write_result(record: dict[str, Any]) -> None:
    path = os.environ.get(_RESULTS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


class _TestTimeout(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _TestTimeout("the test ran past the runner's per-test timeout")


def pytest_runtest_setup(item: Any) -> None:
    seconds = int(os.environ.get(_TIMEOUT_ENV, "0") or 0)
    if seconds > 0 and hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(seconds)


def pytest_runtest_teardown(item: Any) -> None:
    if hasattr(signal, "SIGALRM"):
        signal.alarm(0)


def _error_line(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0] if crash.message else ""
    text = str(report.longrepr or "")
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def pytest_runtest_logreport(report: Any) -> None:
    # The call's outcome, or the setup's when it did not pass (a skip
    # decorator, a failing fixture); teardowns are not the test's.
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = report.outcome
        if report.when == "setup" and outcome == "failed":
            outcome = "error"
        _write_result({"test": report.nodeid, "outcome": outcome,
                       "error": _error_line(report) if outcome != "passed" else ""})


# ------------------------------------------------------------ classification

_NUMBER = re.compile(r"\b0x[0-9a-fA-F]+\b|\b\d+(\.\d+)?\b")


def cause_of(error: str, device: str) -> str:
    """The error with the details that differ between tests taken out."""
    text = error.replace(f"{device}:", "<device>:").replace(device, "<device>")
    text = _NUMBER.sub("N", text)
    return text[:200]


def _dtype_of(test: str) -> Optional[str]:
    name = test.rsplit("::", 1)[-1]
    match = re.search(r"_(float\d+|bfloat16|int\d+|uint\d+|bool|complex\d+|half|"
                      r"float8_\w+)$", name)
    return match.group(1) if match else None


def _twin(test: str, device: str) -> Optional[str]:
    """The CPU twin of a device test's node id, or None if it is no device
    test (the device-type framework names classes TestXxxPRIVATEUSE1, or
    TestXxx<DEVICE>, and tests test_yyy_<device>[_dtype])."""
    parts = test.split("::")
    if len(parts) < 3:
        return None
    suffix = next((s for s in ("PRIVATEUSE1", device.upper()) if parts[-2].endswith(s)), None)
    if suffix is None:
        return None
    cls = parts[-2][: -len(suffix)] + "CPU"
    name = re.sub(f"_{re.escape(device)}(?=_|$)", "_cpu", parts[-1], count=1)
    return "::".join(parts[:-2] + [cls, name])


def classify(results: dict[str, dict[str, str]], device: str,
             dtypes: Optional[set[str]]) -> dict[str, Any]:
    """Classes the device tests of one file (Note [Upstream test runner])."""
    summary: dict[str, Any] = {
        "device_tests": 0, "passed": 0, "skipped": 0, "both_failed": 0,
        "device_only": [], "unclaimed_dtype": 0, "no_twin": 0, "timeouts": 0}
    for test, result in sorted(results.items()):
        twin = _twin(test, device)
        if twin is None:
            continue
        summary["device_tests"] += 1
        dtype = _dtype_of(test)
        if dtypes is not None and dtype is not None and dtype not in dtypes:
            summary["unclaimed_dtype"] += 1
            continue
        outcome = result["outcome"]
        if outcome == "passed":
            summary["passed"] += 1
            continue
        if outcome == "skipped":
            summary["skipped"] += 1
            continue
        if "per-test timeout" in result["error"]:
            summary["timeouts"] += 1
        cpu = results.get(twin)
        if cpu is None:
            summary["no_twin"] += 1
        elif cpu["outcome"] == "passed":
            summary["device_only"].append(
                {"test": test, "cause": cause_of(result["error"], device),
                 "error": result["error"]})
        else:
            summary["both_failed"] += 1
    return summary


# ------------------------------------------------------------------- runner


def _run_file(path: str, device: str, package: str, per_test: int,
              bound: float, extra: list[str]) -> tuple[dict[str, dict[str, str]], bool]:
    """Runs one test file; its results by node id, and whether it hit
    `bound` seconds."""
    path = os.path.abspath(path)
    with tempfile.TemporaryDirectory() as tmp:
        results_path = os.path.join(tmp, "results.jsonl")
        env = dict(os.environ)
        env.update({
            "PYTORCH_TESTING_DEVICE_ONLY_FOR": "cpu,privateuse1",
            _RESULTS_ENV: results_path,
            _TIMEOUT_ENV: str(per_test),
        })
        # --rootdir: node ids are relative to the file's directory whatever
        # configuration file (a pyproject.toml, a pytest.ini) stands above it.
        command = [sys.executable, "-m", "pytest", path, "-q", "-p", "no:cacheprovider",
                   f"--rootdir={os.path.dirname(path)}",
                   "-p", f"{package}._upstream", "-o", "addopts=", *extra]
        timed_out = False
        try:
            subprocess.run(command, env=env, cwd=os.path.dirname(path),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=max(bound, 1.0))
        except subprocess.TimeoutExpired:
            timed_out = True
        results: dict[str, dict[str, str]] = {}
        if os.path.exists(results_path):
            with open(results_path, encoding="utf-8") as f:
                for line in f:
                    record = json.loads(line)
                    # Node ids relative to the file's directory.
                    results[record["test"]] = record
        return results, timed_out


def _print_report(report: dict[str, Any], out: Any) -> None:
    for name, file in report["files"].items():
        print(f"{name}: {file['device_tests']} device tests, {file['passed']} passed, "
              f"{len(file['device_only'])} failed on the device only, "
              f"{file['both_failed']} failed on the CPU too, {file['skipped']} skipped, "
              f"{file['unclaimed_dtype']} over dtypes the specs do not declare"
              + (f", {file['timeouts']} timed out" if file["timeouts"] else "")
              + (" (stopped at its time bound)" if file["stopped"] else ""), file=out)
        causes: dict[str, list[str]] = defaultdict(list)
        for failure in file["device_only"]:
            causes[failure["cause"]].append(failure["test"])
        for cause, tests in sorted(causes.items(), key=lambda c: -len(c[1])):
            print(f"  {len(tests):5d}  {cause}", file=out)
            print(f"         e.g. {tests[0]}", file=out)


def main(spec: Any, argv: Optional[list[str]] = None) -> int:
    """The runner's command line; `spec` is the backend's backend_spec
    module. Returns the exit code: 0, or 1 when a baseline is given and a
    device-only failure is not in it, or 2 for bad arguments."""
    parser = argparse.ArgumentParser(
        prog="tests/upstream/run.py",
        description=f"Runs PyTorch's device-generic tests on {spec.DEVICE} and on the CPU "
        "in the same run and reports the tests that fail on the device only.")
    parser.add_argument("--pytorch-tests", required=True, metavar="DIR",
                        help="the test/ directory of a PyTorch checkout at your torch's tag")
    parser.add_argument("--files", nargs="+", default=list(DEFAULT_FILES),
                        help="test files under DIR (default: the device-generic ones)")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression, for each file")
    parser.add_argument("--per-test-timeout", type=int, default=120, metavar="S")
    parser.add_argument("--per-file-timeout", type=float, default=3600, metavar="S")
    parser.add_argument("--time-budget", type=float, default=6 * 3600, metavar="S",
                        help="stop starting files after this many seconds in all")
    parser.add_argument("--report", metavar="FILE", help="write the report as JSON")
    parser.add_argument("--baseline", metavar="FILE",
                        help="fail on a device-only failure that FILE does not list")
    parser.add_argument("--record-baseline", metavar="FILE",
                        help="write this run's device-only failures to FILE")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.pytorch_tests):
        parser.error(f"--pytorch-tests {args.pytorch_tests}: not a directory")
    missing = [f for f in args.files if not os.path.isfile(os.path.join(args.pytorch_tests, f))]
    if missing:
        parser.error(f"not in {args.pytorch_tests}: {', '.join(missing)}")
    baseline: Optional[set[str]] = None
    if args.baseline:
        with open(args.baseline, encoding="utf-8") as f:
            baseline = set(json.load(f)["device_only"])

    device = spec.DEVICE
    dtypes = {str(d).replace("torch.", "") for d in spec.DTYPES} or None
    extra = ["-k", args.keyword] if args.keyword else []
    start = time.monotonic()
    report: dict[str, Any] = {"device": device, "files": {}, "not_run": []}
    for name in args.files:
        left = args.time_budget - (time.monotonic() - start)
        if left <= 0:
            report["not_run"].append(name)
            continue
        results, stopped = _run_file(os.path.join(args.pytorch_tests, name), device,
                                     spec.PACKAGE, args.per_test_timeout,
                                     min(args.per_file_timeout, left), extra)
        file = classify(results, device, dtypes)
        file["stopped"] = stopped
        report["files"][name] = file
    _print_report(report, sys.stdout)
    if report["not_run"]:
        print(f"not run (time budget spent): {', '.join(report['not_run'])}")
    device_only = sorted(f["test"] for file in report["files"].values()
                         for f in file["device_only"])
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    if args.record_baseline:
        with open(args.record_baseline, "w", encoding="utf-8") as f:
            json.dump({"device": device, "device_only": device_only}, f, indent=1)
    if baseline is not None:
        new = [t for t in device_only if t not in baseline]
        fixed = sorted(baseline - set(device_only))
        for test in fixed:
            print(f"fixed since the baseline: {test}")
        for test in new:
            print(f"new device-only failure: {test}")
        if new:
            return 1
    return 0
