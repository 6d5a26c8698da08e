"""How long the backend's report takes, beside its targets.

    python bench/report_bench.py [--package torch_accel] [--repeat 3]

Three figures, in one run, each the median of `repeat` rounds in a child
process of its own (docs/guide/report.md):

  survey           classifying every ATen overload (`survey.classify`)
                   in a process that has imported torch and the backend;
                   target 30 s
  no numerics      the report without the OpInfo numerics: the survey and
                   the capability matrix, files written
  whole report     the report as `python -m <package>.report` runs it by
                   default; target 10 min on two cores

Each line prints the figure beside its target and the ratio.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time

SURVEY = """
import time, torch, {package}
from {package} import _backend_spec
from {package}._report import survey
start = time.perf_counter()
rows = survey.classify(_backend_spec, {package}.host_addressable())
print(time.perf_counter() - start, len(rows))
"""


def child(*args: str, timed_inside: bool = False) -> float:
    """The wall time of `python *args`, or the seconds it prints first
    (`timed_inside`)."""
    start = time.perf_counter()
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"the child failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return float(r.stdout.split()[0]) if timed_inside else elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="torch_accel")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report = ("-m", f"{args.package}.report", "--out")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        figures = {
            "survey": (lambda: child("-c", SURVEY.format(package=args.package),
                                     timed_inside=True), 30.0),
            "no numerics": (lambda: child(*report, work, "--no-numerics"),
                            None),
            "whole report": (lambda: child(*report, work), 600.0),
        }
        for name, (measure, target) in figures.items():
            seconds = statistics.median(measure() for _ in range(args.repeat))
            rows.append((name, seconds, target))
    print(f"{'':14} {'seconds':>9} {'target':>8} {'of target':>10}")
    for name, seconds, target in rows:
        share = f"{100 * seconds / target:9.1f}%" if target else f"{'-':>10}"
        print(f"{name:14} {seconds:9.2f} {target or '-':>8} {share}")


if __name__ == "__main__":
    main()
