"""The capability matrix: one row per capability a user expects of a
device, each backed by named checks the backend ships (the conformance
suite's: ``_conformance.runtime_checks`` and ``Suite.check_operator``).

A row is ``passed``, ``failed`` (with the first failing check's reason) or
``unsupported`` (a check skipped itself: the driver or the environment
lacks what it needs, or the specs turn the feature off).
"""
from __future__ import annotations

import time
from typing import Any, Callable

import pytest
import torch

from .._conformance.runtime_checks import runtime_cases
from .document import check_interrupted
from .numerics import first_line

# (capability, the runtime checks backing it, by RuntimeCase name). "eager
# operators" is every function the specs register, at float32, through the
# conformance suite's operator check.
ROWS = (
    ("eager operators", ("operators",)),
    ("devices and torch.accelerator",
     ("devices", "invalid_device_index", "accelerator")),
    ("autograd", ("autograd",)),
    ("streams and events", ("stream_ordering", "events")),
    ("memory statistics", ("memory_statistics", "empty_cache",
                           "out_of_memory")),
    ("memory snapshot", ("memory_snapshot",)),
    ("pinned memory", ("pinned_memory",)),
    ("RNG", ("rng",)),
    ("fallback policy", ("fallback_policy",)),
    ("autocast", ("autocast",)),
    ("graphs", ("graphs",)),
    ("profiler", ("profiler",)),
    ("serialization", ("serialization",)),
    ("safetensors", ("safetensors",)),
    ("torch.compile (inductor)", ("compile",)),
    ("torch.compile (aot_eager)", ("compile_aot_eager",)),
    ("torch.export", ("export",)),
    ("collectives and DDP", ("distributed",)),
    ("FSDP2 and DTensor", ("fsdp_dtensor",)),
    ("DeepSpeed", ("deepspeed",)),
    ("Lightning", ("lightning",)),
    ("accelerate and transformers.Trainer", ("accelerate",)),
)
STATUSES = ("passed", "failed", "unsupported")


def _run(check: Callable[[], None]) -> tuple[str, str]:
    try:
        check()
    except pytest.skip.Exception as skipped:
        return "unsupported", str(skipped.msg)
    except Exception as error:  # noqa: BLE001 - the row's reason
        return "failed", first_line(error)
    return "passed", ""


def _operators(suite: Any) -> tuple[str, str]:
    """Every function the specs register, at float32."""
    failed = []
    for case in suite.operator_cases():
        if case.dtype != "float32":
            continue
        status, reason = _run(lambda: suite.check_operator(case))
        if status == "failed":
            failed.append(f"{case.name}: {reason}")
    if failed:
        return "failed", f"{len(failed)} functions differ, first {failed[0]}"
    return "passed", ""


def capabilities(suite: Any, skip: set[str],
                 progress: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """{capability: {"status", "reason", "checks", "seconds"}} for every row
    of ROWS; the rows in `skip` are left "unsupported" without running."""
    cases = {case.name: case for case in runtime_cases(suite.spec)}
    matrix = {}
    for capability, checks in ROWS:
        check_interrupted()
        progress(f"capabilities: {capability}")
        start = time.monotonic()
        status, reason = "passed", ""
        if capability in skip:
            status, reason = "unsupported", "not run (--skip)"
        for name in checks:
            if status != "passed":
                break
            if name == "operators":
                status, reason = _operators(suite)
            elif name not in cases:
                status, reason = ("unsupported",
                                  f"the specs turn it off (no {name} check)")
            else:
                status, reason = _run(lambda: cases[name].check(suite))
                if status == "failed":
                    reason = f"{name}: {reason}"
        torch.manual_seed(0)
        matrix[capability] = {
            "status": status, "reason": reason, "checks": list(checks),
            "seconds": round(time.monotonic() - start, 2)}
    return matrix
