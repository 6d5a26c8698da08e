"""Numerics: every entry of torch's OpInfo database on the device against
the CPU, per dtype profile, with gradients for the differentiable ones.

An entry's samples (its own sample function, Note [OpInfo samples without
torch's tracking] in ``_conformance/inputs.py``) run on the CPU and, moved
to the device, on the device from the same seed. Each (entry, dtype) gets
one status:

* ``strict``: every result within torch's own tolerances for its dtype
  (``torch.testing.assert_close``'s defaults);
* ``basic``: within a loose tolerance (``BASIC_TOLERANCES``), not within
  torch's;
* ``failed``: beyond that, or an error on the device (its first line);
* ``untested``: nothing ran, with why (torch's own compare-with-CPU test
  excludes the entry, the CPU accepts none of its samples, the budget ran
  out).

Recorded beside the status: the device's and the CPU's time per call (the
median over the samples, each timed after an untimed first call), the
fallback calls per call (the path the operator really took:
``<package>.fallback_counts()``), the bytes copied between the host and
the device per call (``<package>.transfer_bytes()``), and the ATen
overloads the device
received (recorded at the dispatcher, below autograd and the composite
decompositions).
"""
from __future__ import annotations

import fnmatch
import math
import re
import statistics
import time
import unittest
from typing import Any, Callable, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .._conformance.inputs import opinfo_samples, seed
from .document import check_interrupted

PROFILES = ("float32", "float16", "bfloat16", "int64", "bool", "complex64")
STATUSES = ("strict", "basic", "failed", "untested")
# How bad a status is, for the diff: higher is worse; untested is not ranked.
RANK = {"strict": 0, "basic": 1, "failed": 2}
# (rtol, atol) of "basic"; integers and booleans have no looser match.
BASIC_TOLERANCES = {
    torch.float16: (5e-2, 5e-2), torch.bfloat16: (5e-2, 5e-2),
    torch.float32: (1e-3, 1e-3), torch.complex64: (1e-3, 1e-3),
    torch.float64: (1e-6, 1e-6),
}


class _Mismatch(Exception):
    pass


def first_line(error: BaseException) -> str:
    text = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {text[:200]}"


def cause_of(error_line: str) -> str:
    """The message with its numbers and quoted names blanked: the failures
    of one cause share it."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", error_line)
    return re.sub(r"\d+", "N", text)[:120]


def excluded_by_torch(op: Any, dtype: torch.dtype) -> bool:
    """Whether torch's own device-against-CPU test (TestCommon.
    test_compare_cpu) skips the entry or expects it to fail on every device
    for `dtype` (results of uninitialised memory, of random draws)."""
    for info in op.decorators:
        if (getattr(info, "cls_name", None) == "TestCommon"
                and getattr(info, "test_name", None) == "test_compare_cpu"
                and info.device_type is None
                and (info.dtypes is None or dtype in info.dtypes)
                and any(d is unittest.expectedFailure
                        or getattr(d, "__qualname__", "").startswith("skip.")
                        for d in info.decorators)):
            return True
    return False


def _verdict(got: Any, want: Any, device: str) -> str:
    """"strict" or "basic" for the device's `got` against the CPU's `want`;
    raises _Mismatch beyond that."""
    got_leaves, want_leaves = tree_flatten(got)[0], tree_flatten(want)[0]
    if len(got_leaves) != len(want_leaves):
        raise _Mismatch(f"{len(got_leaves)} results against the CPU's "
                        f"{len(want_leaves)}")
    verdict = "strict"
    for g, w in zip(got_leaves, want_leaves):
        if isinstance(w, torch.Tensor):
            if not isinstance(g, torch.Tensor):
                raise _Mismatch(f"{type(g).__name__} where the CPU gave a tensor")
            if w.device.type == "cpu" and g.device.type != device:
                raise _Mismatch(f"a result on {g.device}, not on {device}")
            g, w = g.detach().cpu(), w.detach()
            if g.shape != w.shape or g.dtype != w.dtype:
                raise _Mismatch(f"{tuple(g.shape)} {g.dtype} against the "
                                f"CPU's {tuple(w.shape)} {w.dtype}")
            try:
                torch.testing.assert_close(g, w, equal_nan=True,
                                           check_stride=False)
                continue
            except AssertionError:
                pass
            rtol, atol = BASIC_TOLERANCES.get(w.dtype, (0.0, 0.0))
            try:
                torch.testing.assert_close(g, w, rtol=rtol, atol=atol,
                                           equal_nan=True, check_stride=False)
            except AssertionError as error:
                raise _Mismatch(first_line(error).split(": ", 1)[-1]) from None
            verdict = "basic"
        elif isinstance(w, float) and isinstance(g, float):
            if not (g == w or (math.isnan(g) and math.isnan(w))):
                if not math.isclose(g, w, rel_tol=1e-3, abs_tol=1e-3):
                    raise _Mismatch(f"{g!r} against the CPU's {w!r}")
                verdict = "basic"
        elif g != w:
            raise _Mismatch(f"{g!r} against the CPU's {w!r}")
    return verdict


class _Overloads(TorchDispatchMode):
    """The ATen overloads a call sends to the device, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func._schema.name)
        if func._schema.overload_name:
            name += "." + func._schema.overload_name
        if name not in self.names:
            self.names.append(name)
        return func(*args, **(kwargs or {}))


def _to_device(sample: Any, device: str) -> Any:
    def move(t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        moved = t.detach().to(device)
        return moved.requires_grad_(t.requires_grad) if t.is_leaf else moved
    moved = sample.transform(move)
    # Factory samples name the device they were made for.
    moved.kwargs = {key: device if key == "device" and value is not None
                    and torch.device(value).type == "cpu" else value
                    for key, value in moved.kwargs.items()}
    return moved


def _call(op: Any, sample: Any) -> Any:
    return op(sample.input, *sample.args, **sample.kwargs)


def _gradients(op: Any, sample: Any) -> list:
    """The gradients of the sample's float inputs for a fixed weighting of
    the float results (None where an input gets none)."""
    result = _call(op, sample)
    outputs = [t for t in tree_flatten(result)[0]
               if isinstance(t, torch.Tensor) and t.requires_grad]
    inputs = [t for t in tree_flatten((sample.input, sample.args,
                                       sample.kwargs))[0]
              if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outputs or not inputs:
        raise _Untested("the sample has no differentiable result")
    weights = []
    for index, out in enumerate(outputs):
        generator = torch.Generator().manual_seed(index)
        weights.append(torch.randn(out.shape, generator=generator,
                                   dtype=out.dtype).to(out.device))
    return list(torch.autograd.grad(outputs, inputs, weights,
                                    allow_unused=True))


class _Untested(Exception):
    pass


def _add_changes(calls: dict[str, int], before: dict, after: dict) -> None:
    """Adds to `calls` the fallback calls made between two readings of
    fallback_counts()."""
    for kind in calls:
        calls[kind] += (sum(after.get(kind, {}).values())
                        - sum(before.get(kind, {}).values()))


class Numerics:
    """The numerics of the entries `only` selects, over `dtypes`, on
    `device`, within `budget` seconds (None: no bound)."""

    def __init__(self, device: str, module: Any, dtypes: list[str],
                 samples: int, only: list[str], budget: Optional[float],
                 progress: Callable[[str], None]) -> None:
        self.device = device
        self.module = module
        self.dtypes = [getattr(torch, name) for name in dtypes]
        self.samples = samples
        self.only = only
        self.deadline = None if budget is None else time.monotonic() + budget
        self.progress = progress

    def selected(self) -> list:
        try:
            from torch.testing._internal.common_methods_invocations import op_db
        except ImportError as error:
            from .document import EXIT_ENVIRONMENT, ReportError
            raise ReportError(
                f"torch's OpInfo database cannot be imported ({error}); its "
                f"test modules (torch.testing._internal) and expecttest are "
                f"needed for the numerics; --no-numerics reports without "
                f"them", EXIT_ENVIRONMENT) from None
        return [op for op in op_db
                if not self.only or any(fnmatch.fnmatchcase(name, pattern)
                                        for pattern in self.only
                                        for name in (op.name, op.full_name))]

    def run(self) -> dict[str, dict[str, Any]]:
        ops = self.selected()
        results: dict[str, dict[str, Any]] = {}
        started = time.monotonic()
        for number, op in enumerate(ops):
            check_interrupted()
            if number % 25 == 0:
                self.progress(f"numerics: {number}/{len(ops)} entries, "
                              f"{time.monotonic() - started:.0f} s")
            results[op.full_name] = self.entry(op)
        self.progress(f"numerics: {len(ops)}/{len(ops)} entries, "
                      f"{time.monotonic() - started:.0f} s")
        return results

    def _out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def entry(self, op: Any) -> dict[str, Any]:
        row: dict[str, Any] = {"overloads": [], "dtypes": {}}
        supported = op.supported_dtypes("cpu")
        for dtype in self.dtypes:
            if dtype not in supported:
                continue
            row["dtypes"][str(dtype)[6:]] = self.one(op, dtype, row)
        grad_dtype = next((d for d in self.dtypes if d.is_floating_point
                           and d in op.supported_backward_dtypes("cpu")), None)
        if op.supports_autograd and grad_dtype is not None:
            row["gradient"] = dict(self.one(op, grad_dtype, row, backward=True),
                                   dtype=str(grad_dtype)[6:])
        return row

    def one(self, op: Any, dtype: torch.dtype, row: dict,
            backward: bool = False) -> dict[str, Any]:
        if self._out_of_time():
            return {"status": "untested", "why": "the --budget ran out"}
        if excluded_by_torch(op, dtype):
            return {"status": "untested",
                    "why": "torch's own compare-with-CPU test excludes it"}
        run = _gradients if backward else _call
        calls = {"emulate": 0, "cpu": 0}
        copied = {"host_to_device": 0, "device_to_host": 0}
        verdicts, device_s, cpu_s = [], [], []
        try:
            samples = opinfo_samples(op, "cpu", dtype, requires_grad=backward,
                                     limit=self.samples)
        except Exception as error:  # noqa: BLE001 - the entry's own fault
            return {"status": "untested",
                    "why": f"its samples cannot be made: {first_line(error)}"}
        for sample in samples:
            seed(self.device, 0)
            start = time.perf_counter()
            try:
                want = run(op, sample)
            except Exception:  # noqa: BLE001 - the CPU refuses this sample
                continue
            cpu_s.append(time.perf_counter() - start)
            try:
                # Untimed first: what a first call costs once (a learned
                # shape, a lazy initialisation) is no part of the time; on
                # the first sample the call records the overloads too.
                warm = _to_device(sample, self.device)
                seed(self.device, 0)
                if row["overloads"] or backward:
                    run(op, warm)
                else:
                    recorder = _Overloads()
                    with recorder:
                        run(op, warm)
                    row["overloads"] = [name for name in recorder.names
                                        if name.startswith("aten::")]
            except Exception:  # noqa: BLE001 - the timed call reports it
                pass
            moved = _to_device(sample, self.device)
            seed(self.device, 0)
            try:
                fallbacks = self.module.fallback_counts()
                transfers = self.module.transfer_bytes()
                start = time.perf_counter()
                got = run(op, moved)
                self.module.synchronize()
                device_s.append(time.perf_counter() - start)
                _add_changes(calls, fallbacks, self.module.fallback_counts())
                for key, value in self.module.transfer_bytes().items():
                    copied[key] += value - transfers[key]
                verdicts.append(_verdict(got, want, self.device))
            except _Untested as why:
                return {"status": "untested", "why": str(why)}
            except _Mismatch as mismatch:
                return self._failed(f"differs from the CPU: {mismatch}")
            except Exception as error:  # noqa: BLE001 - reported
                return self._failed(first_line(error))
        if not verdicts:
            return {"status": "untested",
                    "why": "the CPU accepts none of its samples"}
        return {
            "status": "basic" if "basic" in verdicts else "strict",
            "samples": len(verdicts),
            # The median call: one sample's pause (a collection, another
            # process) does not move it.
            "device_ms": round(1000.0 * statistics.median(device_s), 4),
            "cpu_ms": round(1000.0 * statistics.median(cpu_s), 4),
            # Per call of the entry: the operators it sent to a fallback,
            # and the bytes the operator itself copied (the samples' moves
            # to the device and the results' back are not in them).
            "fallback_calls": {k: round(v / len(verdicts), 2)
                               for k, v in calls.items() if v},
            "copied_bytes": {k: v // len(verdicts) for k, v in copied.items()},
        }

    @staticmethod
    def _failed(error: str) -> dict[str, Any]:
        return {"status": "failed", "error": error, "cause": cause_of(error)}
