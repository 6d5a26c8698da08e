"""The backend's report (`python -m torch_accel.report`, runtime/python/
_report/): the survey's classification proven by planting each path, the
numerics catching a wrong kernel, the diff catching it and a slowed one by
name, the three files, and bad input.

The planted kernels are Python kernels registered for PrivateUse1 over one
operator (torch.library), in a subprocess that then runs the report's main:
a kernel that returns wrong values must show as failed, one that sleeps
must make the diff against a run without it fail on time.
"""
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

_PACKAGE = "torch_accel"


@pytest.fixture(scope="module")
def report_modules(device, mod):
    if device != "accel":
        pytest.skip("the report's planted paths are the example's operators")
    from torch_accel import _backend_spec, _report
    return _backend_spec, _report


def _report(tmp_path, *args, plant="", timeout=900):
    """The report's main in a fresh interpreter, after `plant`."""
    code = (f"import sys, time, torch, {_PACKAGE}\n" + textwrap.dedent(plant)
            + f"\nfrom {_PACKAGE}._report import main\n"
            f"sys.exit(main(sys.argv[1:], '{_PACKAGE}'))\n")
    return subprocess.run([sys.executable, "-c", code, *map(str, args)],
                          capture_output=True, text=True, cwd=str(tmp_path),
                          timeout=timeout)


def test_survey_covers_every_overload_of_native_functions(report_modules):
    spec, report = report_modules
    import torchgen

    yaml = pathlib.Path(torchgen.__file__).parent / "packaged" / "ATen" / \
        "native" / "native_functions.yaml"
    declared = re.findall(r"^- func: ([\w.]+)\(", yaml.read_text(), re.M)
    survey = report.survey.classify(spec, True)
    assert len(declared) > 2000
    missing = [n for n in declared if f"aten::{n}" not in survey]
    assert not missing, missing[:10]
    assert set(report.survey.counts(survey)) == set(report.survey.PATHS)


# One overload of each path, from the example's specs and torch's
# dispatcher, and how the operator must be seen to run when called.
PLANTED = {
    "aten::add.out": "kernel",
    "aten::abs.out": "stub",
    "aten::_copy_from": "builtin",
    "aten::_thnn_fused_lstm_cell": "hook",
    "aten::addcmul.out": "emulate",
    "aten::logcumsumexp.out": "cpu fallback",
    "aten::hypot.out": "emulate fallback",
    "aten::linear": "composite",
    "aten::_cudnn_rnn": "not implemented",
}


def test_survey_classifies_each_planted_path(report_modules, device, mod):
    spec, report = report_modules
    survey = report.survey.classify(spec, mod.host_addressable())
    assert {name: survey[name]["path"] for name in PLANTED} == PLANTED
    assert survey["aten::add.out"]["kind"] == "kernel"
    # The paths as the device really takes them: the global fallback runs
    # hypot, the CPU fallback logcumsumexp, neither the vendor's add.
    a, b = torch.rand(4, 3), torch.rand(4, 3)
    before = mod.fallback_counts()
    torch.hypot(a.to(device), b.to(device))
    torch.logcumsumexp(a.to(device), 0)
    torch.add(a.to(device), b.to(device))
    after = mod.fallback_counts()

    def ran(kind, name):
        return after.get(kind, {}).get(name, 0) - before.get(kind, {}).get(name, 0)

    assert ran("emulate", "aten::hypot.out") == 1
    assert (ran("cpu", "aten::logcumsumexp.out") +
            ran("cpu", "aten::logcumsumexp")) >= 1
    assert ran("emulate", "aten::add.out") == ran("cpu", "aten::add.out") == 0
    with pytest.raises(NotImplementedError, match="_cudnn_rnn"):
        torch.ops.aten._cudnn_rnn(
            torch.rand(2, 1, 3).to(device), [torch.rand(4, 3).to(device)], 1,
            None, torch.rand(1, 1, 1).to(device), None, 1, 1, 0, 1, False,
            0.0, False, False, [], None)


_WRONG = """
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("sigmoid", lambda x: torch.sigmoid(x.cpu()).add(0.5).to(x.device),
             "PrivateUse1")
"""
_SLOW = """
    lib = torch.library.Library("aten", "IMPL")
    def slow(x):
        time.sleep(0.03)
        return torch.sigmoid(x.cpu()).to(x.device)
    lib.impl("sigmoid", slow, "PrivateUse1")
"""
_RUN = ("--only", "sigmoid", "--only", "nn.functional.relu", "--dtypes",
        "float32", "--skip", "all")


def test_report_writes_json_markdown_and_html(tmp_path, report_modules):
    r = _report(tmp_path, *_RUN, "--out", "good")
    assert r.returncode == 0, r.stderr
    assert "numerics: 2/2 entries" in r.stderr  # progress
    report = json.loads((tmp_path / "good" / "report.json").read_text())
    assert report["schema"] == "accgen-report" and report["version"] == 1
    assert set(report["numerics"]) == {"sigmoid", "nn.functional.relu"}
    cell = report["numerics"]["sigmoid"]["dtypes"]["float32"]
    assert cell["status"] == "strict" and cell["samples"] >= 1, cell
    # On the emulator the operator runs on device memory: no copies.
    assert cell["copied_bytes"] == {"host_to_device": 0,
                                    "device_to_host": 0}, cell
    assert report["numerics"]["sigmoid"]["gradient"]["status"] in ("strict",
                                                                   "basic")
    assert report["numerics"]["sigmoid"]["overloads"][0] == "aten::sigmoid"
    assert "sigmoid" in report["operators"]["aten::sigmoid"]["tested_by"]
    assert all(row["status"] == "unsupported"
               for row in report["capabilities"].values())
    provenance = report["provenance"]
    assert provenance["torch"]["version"] == torch.__version__
    assert len(provenance["harness_sha256"]) == 64
    assert provenance["driver"]["host_addressable"] is True
    markdown = (tmp_path / "good" / "report.md").read_text()
    assert "## Capabilities" in markdown and "## The work list" in markdown
    page = (tmp_path / "good" / "report.html").read_text()
    assert page.count("<svg") == 2 and "aten::" not in page.split("<details>")[0]


def test_wrong_and_slowed_kernels_fail_the_diff_by_name(tmp_path,
                                                         report_modules):
    good = _report(tmp_path, *_RUN, "--out", "good")
    assert good.returncode == 0, good.stderr
    wrong = _report(tmp_path, *_RUN, "--out", "wrong", plant=_WRONG)
    assert wrong.returncode == 0, wrong.stderr
    cell = json.loads((tmp_path / "wrong" / "report.json").read_text())[
        "numerics"]["sigmoid"]["dtypes"]["float32"]
    assert cell["status"] == "failed" and "differs from the CPU" in cell["error"]

    r = _report(tmp_path, "diff", "good/report.json", "wrong/report.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "numerics sigmoid (float32): strict -> failed" in r.stdout
    assert "relu" not in r.stdout.split("better:")[0]

    slow = _report(tmp_path, *_RUN, "--out", "slow", "--baseline",
                   "good/report.json", plant=_SLOW)
    assert slow.returncode == 1, slow.stdout + slow.stderr
    worse = slow.stdout.split("better:")[0]
    assert re.search(r"time sigmoid \(float32\): .* ms a call", worse), worse
    assert "strict -> failed" not in worse
    # The other way round, the slow run against the good one is better.
    r = _report(tmp_path, "diff", "slow/report.json", "good/report.json")
    assert r.returncode == 0 and "time sigmoid (float32)" in r.stdout


def _write(path, text):
    path.write_text(text)
    return path


def test_bad_reports_are_refused_with_their_file_and_a_code(tmp_path,
                                                            report_modules):
    good = _report(tmp_path, "--no-numerics", "--skip", "all", "--out", "good")
    assert good.returncode == 0, good.stderr
    report = json.loads((tmp_path / "good" / "report.json").read_text())
    corrupt = _write(tmp_path / "corrupt.json", '{"schema": "accgen-report",\n  "version": }')
    other = dict(report, backend=dict(report["backend"], device="npu"))
    _write(tmp_path / "other.json", json.dumps(other))
    _write(tmp_path / "future.json", json.dumps(dict(report, version=99)))
    _write(tmp_path / "short.json", json.dumps(
        {k: v for k, v in report.items() if k != "operators"}))
    cases = {
        "corrupt.json": "corrupt.json:2:14: not JSON",
        "other.json": "different backends (device 'accel' against 'npu')",
        "future.json": "schema version 99",
        "short.json": "lacks operators",
        "missing.json": "missing.json: cannot read it",
    }
    for name, message in cases.items():
        r = _report(tmp_path, "diff", "good/report.json", name)
        assert r.returncode == 3, (name, r.stderr)
        assert message in r.stderr, (name, r.stderr)
    r = _report(tmp_path, "--dtypes", "float8", "--out", "x")
    assert r.returncode == 2 and "'float8' is not a profile" in r.stderr
    assert not (tmp_path / "x").exists()


def test_without_opinfo_the_report_says_what_is_missing(tmp_path,
                                                         report_modules):
    r = _report(tmp_path, "--out", "x", plant="""
        sys.modules["torch.testing._internal.common_methods_invocations"] = None
    """)
    assert r.returncode == 4, r.stderr
    assert "OpInfo database cannot be imported" in r.stderr
    assert "--no-numerics" in r.stderr
    assert not (tmp_path / "x").exists()


def test_an_interrupted_run_keeps_the_last_good_report(tmp_path,
                                                        report_modules):
    good = _report(tmp_path, "--no-numerics", "--skip", "all", "--out", "out")
    assert good.returncode == 0, good.stderr
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    process = subprocess.Popen(
        [sys.executable, "-m", f"{_PACKAGE}.report", "--out", "out", "--skip",
         "all"],
        cwd=str(tmp_path), stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))
    for line in process.stderr:
        if line.startswith("report: numerics: 25/"):
            break
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    rest = process.stderr.read()
    assert process.wait(timeout=120) == 130, rest
    assert "interrupted" in rest
    after = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert after == before


def test_the_example_matches_its_published_report(tmp_path, report_modules):
    """The whole report, diffed against docs/reports/data/ (published_reports
    .py): an operator, a dtype or a capability that got worse fails here by
    name."""
    from published_reports import check_published

    check_published("accel", _PACKAGE, tmp_path)
