"""The reports published in docs/reports/ (scripts/publish_reports.py), as
CI checks them: a backend's report, run in full, diffed against the one
published for this torch release (docs/reports/data/<backend>-<release>
.json.gz); anything that got worse fails the test by name.

    ACCGEN_UPDATE_REPORTS=1 <the test>   # publish the new report instead

Times are not compared (--slower 0): the report runs here beside other
tests, whose load makes a CPU operator's time jump tenfold and more (a
parallel region waiting for a descheduled thread), and the published
report comes from another machine. Paths, statuses and capabilities are.
"""
import gzip
import os
import pathlib
import shutil
import subprocess
import sys

import torch

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "docs" / "reports" / "data"


def check_published(name, package, work, env=None, timeout=1200):
    """Runs `package`'s report into work/report and diffs it against the
    published one of `name` (the backend's device name)."""
    release = torch.__version__.split("+")[0]
    stem = DATA / f"{name}-{release}"
    baseline = stem.with_name(stem.name + ".json.gz")
    update = os.environ.get("ACCGEN_UPDATE_REPORTS") == "1"
    out = pathlib.Path(work) / "report"
    args = ["--out", str(out)]
    if not update:
        assert baseline.is_file(), (
            f"no published report {baseline.relative_to(REPO)} for torch "
            f"{release}: publish one with ACCGEN_UPDATE_REPORTS=1, then "
            f"python3 scripts/publish_reports.py")
        args += ["--baseline", str(baseline), "--slower", "0"]
    r = subprocess.run([sys.executable, "-m", f"{package}.report", *args],
                       capture_output=True, text=True, timeout=timeout,
                       cwd=str(work), env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, (
        f"the {name} report against {baseline.relative_to(REPO)} "
        f"(exit {r.returncode}):\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}")
    if not update:
        assert "worse: 0" in r.stdout, r.stdout
        return r
    DATA.mkdir(parents=True, exist_ok=True)
    baseline.write_bytes(gzip.compress((out / "report.json").read_bytes(),
                                       mtime=0))
    shutil.copyfile(out / "report.md", stem.with_name(stem.name + ".md"))
    return r
