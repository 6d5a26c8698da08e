"""Autocompare: every operator on the device checked against the CPU.

Installed in every backend's package under this name and switched on
by the backend's environment variable ``<PREFIX>_AUTOCOMPARE`` (for the
example backend, ``ACCEL_AUTOCOMPARE``), read when the backend loads:

- ``raise``: each operator that takes or makes device tensors also runs on
  CPU copies of its inputs, and the results (and the inputs an in-place or
  ``out=`` operator writes) are compared with tolerances for their dtype.
  The first mismatch raises :class:`AutocompareError`, naming the operator,
  its schema, the input shapes and dtypes and the largest difference;
- ``log``: the same checks, but a mismatch is reported as one line on
  stderr per mismatching operator, and the program goes on;
- unset, empty or ``0``: nothing is installed, and nothing costs anything.

Operators whose results cannot match by design are not compared: random
operators (their draws come from the device's generator), operators that
return uninitialised memory, and operators the CPU refuses for these inputs.
The checks run in the thread that loaded the backend, through a
TorchDispatchMode, below autograd: forward and backward operators alike.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

MODES = ("raise", "log")

# Results of these are uninitialised memory, or bookkeeping of the device.
_NOT_COMPARED = {
    "aten::empty",
    "aten::empty_like",
    "aten::empty_strided",
    "aten::new_empty",
    "aten::new_empty_strided",
    "aten::resize_",
    "aten::set_",
    "aten::record_stream",
    "aten::_local_scalar_dense",
    "aten::_to_copy",
    "aten::copy_",
    "aten::lift_fresh",
    "aten::detach",
    "aten::alias",
}


class AutocompareError(RuntimeError):
    """A device operator's result differs from the CPU's."""


def _tolerances(dtype: torch.dtype) -> tuple[float, float]:
    if dtype in (torch.float16, torch.bfloat16, torch.complex32):
        return 1e-2, 1e-2
    if dtype in (torch.float32, torch.complex64):
        return 1.3e-5, 1e-5
    if dtype.is_floating_point or dtype.is_complex:
        return 1e-7, 1e-7
    return 0.0, 0.0


def _largest_difference(got: torch.Tensor, want: torch.Tensor) -> str:
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)} against {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} against {want.dtype}"
    if got.numel() == 0:
        return "none"
    if got.dtype == torch.bool:
        return f"{int((got != want).sum())} differing elements"
    diff = (got.to(torch.complex128 if got.is_complex() else torch.float64)
            - want.to(torch.complex128 if want.is_complex() else torch.float64)).abs()
    diff = torch.where(torch.isnan(got) & torch.isnan(want),
                       torch.zeros_like(diff), diff)
    index = int(diff.flatten().argmax())
    return (f"{float(diff.flatten()[index]):.6g} at flat index {index} "
            f"(device {got.flatten()[index].item()}, "
            f"cpu {want.flatten()[index].item()})")


class _AutoCompare(TorchDispatchMode):
    def __init__(self, device_type: str, mode: str) -> None:
        super().__init__()
        self.device_type = device_type
        self.mode = mode
        self.reported: set[str] = set()

    def _on_device(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor) and value.device.type == self.device_type

    def _to_cpu(self, value: Any) -> Any:
        if self._on_device(value):
            return value.detach().cpu()
        if isinstance(value, torch.device) and value.type == self.device_type:
            return torch.device("cpu")
        return value

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        leaves, _ = tree_flatten((args, kwargs))
        involved = any(self._on_device(v) for v in leaves) or any(
            (isinstance(v, torch.device) and v.type == self.device_type)
            or (isinstance(v, str) and v.split(":")[0] == self.device_type)
            for v in leaves)
        if (not involved or name in _NOT_COMPARED
                or torch.Tag.nondeterministic_seeded in func.tags):
            return func(*args, **kwargs)
        cpu_args, cpu_kwargs = tree_map(self._to_cpu, (args, kwargs))
        if isinstance(cpu_kwargs.get("device"), str):
            cpu_kwargs["device"] = "cpu"
        result = func(*args, **kwargs)
        try:
            expected = func(*cpu_args, **cpu_kwargs)
        except Exception:  # noqa: BLE001 - the CPU refuses: nothing to compare
            return result
        # What the operator wrote: its results, and the inputs it mutates.
        got, want = [result], [expected]
        for index, argument in enumerate(func._schema.arguments):
            if argument.alias_info is not None and argument.alias_info.is_write:
                if argument.kwarg_only or index >= len(args):
                    got.append(kwargs.get(argument.name))
                    want.append(cpu_kwargs.get(argument.name))
                else:
                    got.append(args[index])
                    want.append(cpu_args[index])
        self._compare(func, args, kwargs, tree_flatten(got)[0],
                      tree_flatten(want)[0])
        return result

    def _compare(self, func, args, kwargs, got: list, want: list) -> None:
        for g, w in zip(got, want):
            if not isinstance(g, torch.Tensor) or not isinstance(w, torch.Tensor):
                continue
            g_cpu = g.detach().cpu()
            rtol, atol = _tolerances(w.dtype)
            try:
                torch.testing.assert_close(g_cpu, w, rtol=rtol, atol=atol,
                                           equal_nan=True, check_device=False,
                                           check_stride=False)
            except AssertionError:
                pass
            else:
                continue
            self._mismatch(func, args, kwargs, _largest_difference(g_cpu, w))
            return

    def _mismatch(self, func, args, kwargs, difference: str) -> None:
        inputs = ", ".join(
            f"{tuple(t.shape)} {t.dtype} on {t.device}"
            for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor))
        message = (f"autocompare: {func._schema.name} differs from the CPU: "
                   f"largest difference {difference}; inputs: "
                   f"[{inputs}]; schema: {func._schema}")
        if self.mode == "raise":
            raise AutocompareError(message)
        if func._schema.name not in self.reported:
            self.reported.add(func._schema.name)
            print(message, file=sys.stderr, flush=True)


_installed: Optional[_AutoCompare] = None


def install(device_type: str, mode: str) -> None:
    """Turns autocompare on for the calling thread ("raise" or "log")."""
    global _installed
    if mode not in MODES:
        raise ValueError(f"autocompare: unknown mode {mode!r}; expected one "
                         f"of {', '.join(MODES)}, or 0 for off")
    if _installed is not None:
        return
    _installed = _AutoCompare(device_type, mode)
    _installed.__enter__()
