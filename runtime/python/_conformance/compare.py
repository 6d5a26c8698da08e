"""Moving values to the device and comparing results with the CPU's."""
from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from .._autocompare import _largest_difference, _tolerances
from .cases import ConformanceError

# --------------------------------------------------------------------------
# Values


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        layout = "" if value.is_contiguous() else ", non-contiguous"
        return f"{tuple(value.shape)} {str(value.dtype)[6:]}{layout}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return repr(value)


def describe_inputs(named: dict) -> str:
    return ", ".join(f"{k}={_describe(v)}" for k, v in named.items())


def _noncontiguous(t: torch.Tensor, device: Any) -> torch.Tensor:
    """A copy of `t` on `device` with the same values and a stride of 2 in
    its last dimension."""
    if t.dim() == 0 or t.numel() <= 1:
        return t.to(device)
    shape = list(t.shape)
    shape[-1] *= 2
    base = torch.zeros(shape, dtype=t.dtype, device=device)
    view = base[..., ::2]
    view.copy_(t)
    return view


def _move(value: Any, device: str, noncontiguous: bool = False) -> Any:
    """`value` (CPU) for a run on `device`: tensors copied, a CPU device
    argument replaced."""
    def one(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            if noncontiguous:
                moved = _noncontiguous(v.detach(), device)
            elif device == "cpu":
                moved = v.detach().clone()
            else:
                moved = v.detach().to(device)
            return moved.requires_grad_(v.requires_grad) if v.is_leaf else moved
        if isinstance(v, torch.device) and v.type == "cpu":
            return torch.device(device)
        return v
    return tree_map(one, value)


def _paired_leaves(got: Any, want: Any, what: str) -> list:
    """The values of `got` and `want` side by side; their counts must match."""
    got_leaves, _ = tree_flatten(got)
    want_leaves, _ = tree_flatten(want)
    if len(got_leaves) != len(want_leaves):
        raise ConformanceError(
            f"{what}: {len(got_leaves)} values against the "
            f"{len(want_leaves)} expected")
    return list(zip(got_leaves, want_leaves))


def _assert_same(got: Any, want: Any, device: str, what: str,
                 loose: bool = False) -> None:
    """`got` (device) against `want` (CPU): the same structure, devices,
    shapes, dtypes, and values within the tolerances of their dtype; `loose`
    allows the rounding of a fused kernel against a decomposed one in 16-bit
    dtypes."""
    for index, (g, w) in enumerate(_paired_leaves(got, want, what)):
        label = f"{what}, value {index}"
        if isinstance(w, torch.Tensor):
            if not isinstance(g, torch.Tensor):
                raise ConformanceError(f"{label}: {type(g).__name__}, not a tensor")
            if w.device.type == "cpu" and g.device.type != device:
                raise ConformanceError(f"{label}: on {g.device}, not on {device}")
            g_cpu = g.detach().cpu()
            w = w.detach()
            if g_cpu.shape != w.shape or g_cpu.dtype != w.dtype:
                raise ConformanceError(
                    f"{label}: {_describe(g_cpu)} against the CPU's {_describe(w)}")
            rtol, atol = _tolerances(w.dtype)
            if loose and w.dtype in (torch.float16, torch.bfloat16):
                rtol, atol = 4e-2, 4e-2
            try:
                torch.testing.assert_close(g_cpu, w, rtol=rtol, atol=atol,
                                           equal_nan=True, check_stride=False)
            except AssertionError:
                raise ConformanceError(
                    f"{label} differs from the CPU: largest difference "
                    f"{_largest_difference(g_cpu, w)}") from None
        elif isinstance(w, float) and isinstance(g, float):
            if not (g == w or (math.isnan(g) and math.isnan(w))
                    or math.isclose(g, w, rel_tol=1e-5, abs_tol=1e-6)):
                raise ConformanceError(f"{label}: {g!r} against the CPU's {w!r}")
        elif g != w:
            raise ConformanceError(f"{label}: {g!r} against the CPU's {w!r}")


def _assert_same_metadata(got: Any, want: Any, device: str, what: str) -> None:
    for index, (g, w) in enumerate(_paired_leaves(got, want, what)):
        if isinstance(w, torch.Tensor):
            if (not isinstance(g, torch.Tensor) or g.shape != w.shape
                    or g.dtype != w.dtype
                    or (w.device.type == "cpu" and g.device.type != device)):
                raise ConformanceError(
                    f"{what}, value {index}: {_describe(g)} on "
                    f"{getattr(g, 'device', '?')} against {_describe(w)}")


