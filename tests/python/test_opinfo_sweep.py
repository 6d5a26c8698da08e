"""Every operator of torch's OpInfo database on the device against the CPU.

For each OpInfo entry (torch.testing._internal.common_methods_invocations
.op_db) that supports float32 on the CPU, its first float32 sample inputs
run on the CPU and, moved to the device, on the device, from the same seed;
the results must match. Nothing here lists operators: what the spec does not
register runs through the backend's global fallback, and the run must not
reach the CPU fallback at all, except for the operators the spec itself
gives `kind: fallback`.

Every entry runs. An entry that differs from the CPU fails the test unless
torch's own device/CPU comparison (TestCommon.test_compare_cpu) skips or
expects it to fail on every device (results of uninitialised memory, empty*,
or of random draws in another order), or it is KNOWN here, with its reason;
a KNOWN entry that passes fails the test too, so the list stays true. At
least 99% of the entries torch does not exclude must pass.
"""
import importlib
import os
import pathlib

import pytest
import torch
import yaml
from torch.utils._pytree import tree_flatten

from torch.testing._internal.common_methods_invocations import op_db

SAMPLES = 5

KNOWN = {
    "to": "its samples move the tensor to the CPU, where the result then "
          "is by design",
    "tensor_split": "a sample passes its split points as a CPU tensor, "
                    "which the operator requires on the CPU by design",
}

_SPECS = pathlib.Path(os.environ.get(
    "ACCGEN_TEST_SPECS", pathlib.Path(__file__).resolve().parents[2] / "specs"))


def _spec_fallback_ops() -> set[str]:
    with open(_SPECS / "operators.yaml", encoding="utf-8") as f:
        entries = yaml.safe_load(f).get("operators") or []
    return {e["op"].split(".")[0] for e in entries
            if e.get("kind") == "fallback"}


def _group_of(name: str) -> str:
    """The spec entry that lists an operator: "aten::cumsum_.dim" and
    "aten::cumsum.out" are both "cumsum" (the fallback counts of the whole
    process include other tests' calls of a group's in-place form)."""
    base = name.split("::")[1].split(".")[0]
    if base.endswith("_") and not base.startswith("__"):
        base = base[:-1]
    return base


def _compare(op, sample, device, checks):
    checks.seed(device, 0)
    try:
        want = op(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001 - the CPU refuses this sample too
        return
    moved = sample.transform(
        lambda t: t.to(device) if isinstance(t, torch.Tensor) else t)
    # Factory samples name the device they were made for.
    kwargs = {key: device if key == "device" and torch.device(value).type == "cpu"
              else value for key, value in moved.kwargs.items()}
    checks.seed(device, 0)
    got = op(moved.input, *moved.args, **kwargs)
    got_leaves, _ = tree_flatten(got)
    want_leaves, _ = tree_flatten(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        if isinstance(w, torch.Tensor):
            assert isinstance(g, torch.Tensor)
            if w.device.type == "cpu":
                assert g.device.type == device, g.device
            torch.testing.assert_close(
                g.cpu(), w, equal_nan=True, atol=1e-4, rtol=1e-4,
                check_device=False)
        else:
            assert g == w or (g != g and w != w), (g, w)


def test_opinfo_operators_match_the_cpu(device, mod, checks):
    excluded_by_torch = importlib.import_module(
        mod.__name__ + "._report.numerics").excluded_by_torch
    ops = [op for op in op_db
           if torch.float32 in op.supported_dtypes("cpu")]
    ran, passed, failures, unexpected_passes = 0, 0, {}, []
    excluded = 0
    for op in ops:
        try:
            # The backend's own sampling (Note [OpInfo samples without
            # torch's tracking] in its _conformance/inputs.py).
            for sample in checks.opinfo_samples(op, "cpu", torch.float32,
                                                limit=SAMPLES):
                _compare(op, sample, device, checks)
        except Exception as error:  # noqa: BLE001 - reported below
            # torch's own compare-with-CPU test excludes it (the backend's
            # report uses the same rule).
            if excluded_by_torch(op, torch.float32):
                excluded += 1
                continue
            ran += 1
            first_line = (str(error).strip().splitlines() or [""])[0]
            failures[op.full_name] = f"{type(error).__name__}: {first_line[:200]}"
            continue
        ran += 1
        passed += 1
        if op.full_name in KNOWN:
            unexpected_passes.append(op.full_name)

    unexpected = {name: why for name, why in failures.items()
                  if name not in KNOWN}
    report = "\n".join(f"  {name}: {why}"
                       for name, why in sorted(unexpected.items()))
    print(f"OpInfo sweep on {device}: {passed}/{ran} entries pass "
          f"({100.0 * passed / ran:.1f}%), {len(failures)} known failures, "
          f"{excluded} more differ where torch's own compare-with-CPU test "
          f"excludes them")
    assert not unexpected, f"OpInfo entries that differ from the CPU:\n{report}"
    assert not unexpected_passes, (
        f"these KNOWN entries pass now; remove them: {unexpected_passes}")
    assert passed >= 0.99 * ran, (passed, ran)

    cpu_fallback = set(mod.fallback_counts().get("cpu", {}))
    allowed = _spec_fallback_ops()
    stray = {name for name in cpu_fallback
             if _group_of(name) not in allowed}
    assert not stray, f"operators that reached the CPU fallback: {stray}"
