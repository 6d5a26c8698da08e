"""The backend's report: what works on the device, per operator and per
capability (docs/guide/report.md).

Installed in every backend's package as ``_report``, and run as
``python -m <package>.report``. The modules, by job:

* ``survey``: every ATen overload, by the path it takes on the backend;
* ``numerics``: torch's OpInfo entries on the device against the CPU;
* ``capabilities``: the capability matrix, from the conformance checks;
* ``provenance``: where a report comes from;
* ``document``: the JSON schema, reading and writing reports, exit codes;
* ``render``: Markdown and the HTML page;
* ``diff``: what got worse between two reports.
"""
from __future__ import annotations

import argparse
import importlib
import pathlib
import sys
import time
from typing import Any, Optional

from . import capabilities, diff, document, numerics, provenance, render, survey
from .document import EXIT_INTERRUPTED, EXIT_OK, EXIT_REGRESSION, ReportError


def _progress(message: str) -> None:
    print(f"report: {message}", file=sys.stderr, flush=True)


def _parser(package: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m {package}.report",
        description="What works on the device: every ATen operator by the "
                    "path it takes, torch's OpInfo entries against the CPU, "
                    "and the capability matrix. Writes report.json, "
                    "report.md and report.html.")
    parser.add_argument("--out", default="report", type=pathlib.Path,
                        help="the directory the report goes to (default "
                             "./report)")
    parser.add_argument("--only", action="append", default=[],
                        metavar="PATTERN",
                        help="run the numerics of the OpInfo entries whose "
                             "name matches PATTERN (fnmatch; repeatable)")
    parser.add_argument("--dtypes", default=None,
                        help="comma-separated dtype profiles (default: those "
                             f"of {', '.join(numerics.PROFILES)} the specs "
                             f"declare)")
    parser.add_argument("--samples", type=int, default=3,
                        help="samples per entry and dtype (default 3)")
    parser.add_argument("--budget", type=float, default=None,
                        metavar="SECONDS",
                        help="stop starting numerics after this long; the "
                             "rest is reported untested")
    parser.add_argument("--no-numerics", action="store_true",
                        help="the survey and the capabilities only")
    parser.add_argument("--skip", action="append", default=[],
                        metavar="CAPABILITY",
                        help="leave a capability unrun (repeatable; "
                             "'all' for none)")
    parser.add_argument("--baseline", type=pathlib.Path, default=None,
                        help="diff the new report against this one; exit 1 "
                             "on a regression")
    _time_options(parser)
    return parser


def _time_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--slower", type=float, default=3.0,
                        help="a device time this many times the baseline's "
                             "is a regression (default 3; 0: times are not "
                             "compared)")
    parser.add_argument("--floor-ms", type=float, default=1.0,
                        help="time differences below this are noise "
                             "(default 1 ms)")


def _diff_parser(package: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m {package}.report diff",
        description="What got worse and what got better from OLD to NEW; "
                    "exit status 1 if anything got worse.")
    parser.add_argument("old")
    parser.add_argument("new")
    _time_options(parser)
    return parser


def _print_diff(worse: list[str], better: list[str], notes: list[str]) -> int:
    for title, lines in (("worse", worse), ("better", better),
                         ("notes", notes)):
        print(f"{title}: {len(lines)}")
        for line in lines:
            print(f"  {line}")
    return EXIT_REGRESSION if worse else EXIT_OK


def _summary(operators: dict, results: dict, matrix: dict, samples: int,
             dtypes: list[str], run: str) -> dict[str, Any]:
    by_dtype: dict[str, dict[str, int]] = {d: {} for d in dtypes}
    by_dtype["gradient"] = {}
    causes: dict[str, list[str]] = {}
    for name, entry in results.items():
        cells = list(entry["dtypes"].items())
        if "gradient" in entry:
            cells.append(("gradient", entry["gradient"]))
        for dtype, cell in cells:
            counts = by_dtype.setdefault(dtype, {})
            counts[cell["status"]] = counts.get(cell["status"], 0) + 1
            if cell["status"] == "failed":
                causes.setdefault(cell["cause"], []).append(f"{name} ({dtype})")
    by_path = survey.counts(operators)
    return {
        "run": run,
        "operators": {
            "total": len(operators), "by_path": by_path,
            "on_device": sum(by_path[p] for p in survey.ON_DEVICE)},
        "numerics": {
            "entries": len(results), "samples": samples, "by_dtype": by_dtype,
            "causes": [{"cause": cause, "count": len(where),
                        "examples": where[:3]}
                       for cause, where in sorted(causes.items(),
                                                  key=lambda c: -len(c[1]))]},
        "capabilities": {status: sum(r["status"] == status
                                     for r in matrix.values())
                         for status in capabilities.STATUSES},
    }


def _spec(package: str) -> Any:
    try:
        return importlib.import_module(f"{package}._backend_spec")
    except ImportError:
        raise ReportError(
            f"{package} has no _backend_spec module: it was built by an "
            f"accgen without the report; regenerate and rebuild it",
            document.EXIT_ENVIRONMENT) from None


def run(args: argparse.Namespace, package: str) -> int:
    started = time.monotonic()
    module = importlib.import_module(package)
    spec = _spec(package)
    from .._conformance import suite as suite_of

    dtypes = (args.dtypes.split(",") if args.dtypes else
              [d for d in numerics.PROFILES if d in spec.DTYPES])
    for dtype in dtypes:
        if dtype not in numerics.PROFILES:
            raise ReportError(f"--dtypes: {dtype!r} is not a profile "
                              f"({', '.join(numerics.PROFILES)})",
                              document.EXIT_USAGE)
    baseline = document.load(str(args.baseline)) if args.baseline else None

    _progress("survey")
    operators = survey.classify(spec, module.host_addressable())
    results: dict = {}
    if not args.no_numerics:
        results = numerics.Numerics(spec.DEVICE, module, dtypes, args.samples,
                                    args.only, args.budget, _progress).run()
    for row in operators.values():
        row["tested_by"] = []
    for name, entry in sorted(results.items()):
        if entry["overloads"] and entry["overloads"][0] in operators:
            operators[entry["overloads"][0]]["tested_by"].append(name)
    skip = set(args.skip)
    if "all" in skip:
        skip = {name for name, _ in capabilities.ROWS}
    matrix = capabilities.capabilities(suite_of(spec), skip, _progress)
    run_line = (f"{len(results)} OpInfo entries over {', '.join(dtypes)}, "
                f"{args.samples} samples"
                + (f", only {' '.join(args.only)}" if args.only else "")
                + (f", budget {args.budget:g} s" if args.budget else "")
                + f"; {time.monotonic() - started:.0f} s")
    report = {
        "schema": document.SCHEMA, "version": document.VERSION,
        "backend": {"device": spec.DEVICE, "package": spec.PACKAGE,
                    "fallback": spec.FALLBACK},
        "provenance": provenance.provenance(spec, module),
        "summary": _summary(operators, results, matrix, args.samples, dtypes,
                            run_line),
        "operators": operators,
        "numerics": results,
        "capabilities": matrix,
    }
    document.check_interrupted()
    texts = {"report.json": document.dumps(report),
             "report.md": render.markdown(report),
             "report.html": render.html_page(report)}
    for name, text in texts.items():
        document.write_atomically(args.out / name, text)
    s = report["summary"]
    print(f"{s['operators']['on_device']}/{s['operators']['total']} overloads "
          f"on the device; capabilities {s['capabilities']}; "
          f"{run_line}; written to {args.out}/report.{{json,md,html}}")
    if baseline is None:
        return EXIT_OK
    return _print_diff(*diff.diff(baseline, report, args.slower,
                                  args.floor_ms))


def main(argv: list[str], package: str) -> int:
    document.catch_interrupts()
    try:
        if argv[:1] == ["diff"]:
            args = _diff_parser(package).parse_args(argv[1:])
            old, new = document.load(args.old), document.load(args.new)
            return _print_diff(*diff.diff(old, new, args.slower,
                                          args.floor_ms))
        return run(_parser(package).parse_args(argv), package)
    except ReportError as error:
        print(f"report: error: {error}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        print("report: interrupted; the report files written before are "
              "unchanged", file=sys.stderr)
        return EXIT_INTERRUPTED


def entry(package: Optional[str] = None) -> None:
    """The module's main: `python -m <package>.report`."""
    sys.exit(main(sys.argv[1:], package or __package__.rsplit(".", 1)[0]))
