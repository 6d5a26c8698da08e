#!/usr/bin/env python3
"""The published reports: one page per backend in docs/reports/, and the
summary figures in README.md, made from the reports CI checks against
(docs/reports/data/<backend>-<torch release>.json.gz and .md, written by
`ACCGEN_UPDATE_REPORTS=1` runs of tests/python/published_reports.py's
tests; docs/guide/report.md).

    python3 scripts/publish_reports.py           # rewrite the pages
    python3 scripts/publish_reports.py --check   # exit 1 if they are stale

Needs nothing but Python: the reports are read as data.
"""
import argparse
import gzip
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "reports" / "data"
PAGES = ROOT / "docs" / "reports"
README = ROOT / "README.md"
# The backends with a published report: their file-name stem and page title.
BACKENDS = {
    "accel": "the example on the emulator",
    "raccel": "examples/remote on the remote driver",
}
START, END = "<!-- reports:start -->", "<!-- reports:end -->"


def _release_key(release: str) -> tuple:
    return tuple(int(part) for part in re.findall(r"\d+", release))


def reports() -> dict[str, list[tuple[str, dict, str]]]:
    """{backend: [(torch release, report, markdown)]}, releases in order."""
    found: dict[str, list[tuple[str, dict, str]]] = {b: [] for b in BACKENDS}
    for path in sorted(DATA.glob("*.json.gz")):
        backend, release = path.name[:-len(".json.gz")].rsplit("-", 1)
        if backend not in found:
            sys.exit(f"{path}: no backend {backend!r} in BACKENDS of {__file__}")
        report = json.loads(gzip.decompress(path.read_bytes()))
        markdown = path.with_name(path.name[:-len(".json.gz")] + ".md")
        found[backend].append((release, report, markdown.read_text()))
    for rows in found.values():
        rows.sort(key=lambda row: _release_key(row[0]))
    return found


def _figures(report: dict) -> list[str]:
    s = report["summary"]
    ops, numerics = s["operators"], s["numerics"]["by_dtype"]
    f32 = numerics.get("float32", {})
    ran = sum(f32.get(k, 0) for k in ("strict", "basic", "failed"))
    caps = s["capabilities"]
    return [f"{ops['on_device']} of {ops['total']} on the device, "
            f"{ops['by_path']['composite']} composite, "
            f"{ops['by_path']['cpu fallback']} on the CPU fallback",
            f"{f32.get('strict', 0)} strict of {ran} "
            f"({f32.get('failed', 0)} failed)",
            f"{caps['passed']} of {sum(caps.values())} passed"]


def summary_table(found: dict) -> str:
    lines = ["| backend | torch | operators | OpInfo entries, float32 "
             "| capabilities |", "|---|---|---|---|---|"]
    for backend, rows in found.items():
        for release, report, _ in rows:
            lines.append(f"| [{backend}](docs/reports/{backend}.md) | "
                         f"{release} | " + " | ".join(_figures(report)) + " |")
    return "\n".join(lines)


def _demoted(markdown: str) -> str:
    return "\n".join("#" + line if line.startswith("#") else line
                     for line in markdown.splitlines())


def page(backend: str, rows: list) -> str:
    out = [f"# What works: {BACKENDS[backend]}", "",
           "Made by `python scripts/publish_reports.py` from the reports "
           "CI diffs against (`docs/reports/data/`); "
           "[reading them](../guide/report.md).", "",
           "| torch | operators | OpInfo entries, float32 | capabilities "
           "| date | accgen's inputs |", "|---|---|---|---|---|---|"]
    for release, report, _ in rows:
        p = report["provenance"]
        out.append(f"| {release} | " + " | ".join(_figures(report))
                   + f" | {p['date'][:10]} | {p['accgen']['inputs']} |")
    for release, _, markdown in reversed(rows):
        out += ["", f"## torch {release}", "", _demoted(markdown).split(
            "\n", 1)[1].strip()]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a page or README.md is stale")
    args = parser.parse_args()
    found = reports()
    wanted = {PAGES / f"{b}.md": page(b, rows) for b, rows in found.items()
              if rows}
    readme = README.read_text()
    if START not in readme or END not in readme:
        sys.exit(f"{README}: the markers {START} and {END} are missing")
    head, rest = readme.split(START, 1)
    wanted[README] = (head + START + "\n" + summary_table(found) + "\n" + END
                      + rest.split(END, 1)[1])
    stale = [path for path, text in wanted.items()
             if not path.is_file() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python3 "
                  f"scripts/publish_reports.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
