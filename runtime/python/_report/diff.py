"""`report diff OLD.json NEW.json`: what got worse and what got better.

Worse, and a regression (exit status 1):

* an operator whose path moved off the device (to the CPU fallback, or to
  not implemented; survey.RANK);
* an OpInfo entry whose status for a dtype, or whose gradient, got worse
  (strict, basic, failed: numerics.RANK);
* an entry whose device time per call grew by more than `slower` times and
  by more than `floor_ms` (times below the floor are noise; `slower` 0
  compares no times);
* a capability that passed and no longer does.

What only one report has (an entry the other run did not reach, an
overload another torch does not have, an untested cell) is listed as a
note, never a regression: a short run diffed against a full baseline
compares what both ran.
"""
from __future__ import annotations

from typing import Any

from . import numerics, survey
from .document import ReportError


def _cells(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    cells = {}
    for name, entry in report["numerics"].items():
        for dtype, cell in entry["dtypes"].items():
            cells[(name, dtype)] = cell
        if "gradient" in entry:
            cells[(name, "gradient")] = entry["gradient"]
    return cells


def diff(old: dict[str, Any], new: dict[str, Any], slower: float = 3.0,
         floor_ms: float = 1.0) -> tuple[list[str], list[str], list[str]]:
    """(worse, better, notes), each a list of one-line findings."""
    for key in ("device", "package"):
        if old["backend"][key] != new["backend"][key]:
            raise ReportError(
                f"the reports are of different backends ({key} "
                f"{old['backend'][key]!r} against {new['backend'][key]!r}): a "
                f"baseline is compared with a report of the same backend")
    worse: list[str] = []
    better: list[str] = []
    notes: list[str] = []

    old_ops, new_ops = old["operators"], new["operators"]
    for name in sorted(old_ops.keys() & new_ops.keys()):
        before, after = old_ops[name]["path"], new_ops[name]["path"]
        if before == after:
            continue
        change = f"{name}: {before} -> {after}"
        if survey.RANK[after] > survey.RANK[before]:
            worse.append(f"operator {change}")
        elif survey.RANK[after] < survey.RANK[before]:
            better.append(f"operator {change}")
        else:
            notes.append(f"operator {change}")
    gone = sorted(old_ops.keys() - new_ops.keys())
    added = sorted(new_ops.keys() - old_ops.keys())
    if gone:
        notes.append(f"{len(gone)} overloads only in OLD, e.g. {gone[0]}")
    if added:
        notes.append(f"{len(added)} overloads only in NEW, e.g. {added[0]}")

    old_cells, new_cells = _cells(old), _cells(new)
    for key in sorted(old_cells.keys() & new_cells.keys()):
        a, b = old_cells[key], new_cells[key]
        what = f"{key[0]} ({key[1]})"
        ra, rb = numerics.RANK.get(a["status"]), numerics.RANK.get(b["status"])
        if ra is None or rb is None:
            if a["status"] != b["status"]:
                notes.append(f"numerics {what}: {a['status']} -> "
                             f"{b['status']}" + (f" ({b['why']})"
                                                 if "why" in b else ""))
            continue
        if rb > ra:
            reason = f": {b['error']}" if "error" in b else ""
            worse.append(f"numerics {what}: {a['status']} -> "
                         f"{b['status']}{reason}")
        elif rb < ra:
            better.append(f"numerics {what}: {a['status']} -> {b['status']}")
        ta, tb = a.get("device_ms"), b.get("device_ms")
        if slower > 0 and ta is not None and tb is not None:
            if tb > slower * ta and tb - ta > floor_ms:
                worse.append(f"time {what}: {ta:.3f} -> {tb:.3f} ms a call "
                             f"({tb / max(ta, 1e-9):.1f}x)")
            elif ta > slower * tb and ta - tb > floor_ms:
                better.append(f"time {what}: {ta:.3f} -> {tb:.3f} ms a call")
    only_old = len(old_cells.keys() - new_cells.keys())
    if only_old:
        notes.append(f"{only_old} numerics cells only in OLD (not run in NEW)")

    for name in sorted(old["capabilities"].keys() & new["capabilities"].keys()):
        a, b = old["capabilities"][name], new["capabilities"][name]
        if a["status"] == b["status"]:
            continue
        change = f"capability {name}: {a['status']} -> {b['status']}"
        if a["status"] == "passed":
            worse.append(change + (f" ({b['reason']})" if b["reason"] else ""))
        elif b["status"] == "passed":
            better.append(change)
        else:
            notes.append(change)
    return worse, better, notes
