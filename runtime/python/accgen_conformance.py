"""The conformance checks of a generated backend.

Installed in every backend's package as ``_conformance.py``. The backend's
generated ``tests/conformance/`` suite parametrizes these checks over what
its specs say (``backend_spec.py``): every function it registers over the
dtypes it declares, its custom operators, its autocast policies, and the
runtime. Nothing here knows a particular backend.

How an operator is checked (:meth:`Suite.check_operator`): its inputs come
from torch's OpInfo database where an entry calls the function (recorded
at the dispatcher, so the exact overload and arguments are known), else
they are generated from its schema; every input the CPU accepts runs on the
CPU and on the device, in the registered form (functional, in-place,
``out=``), and the results and written arguments must match. Then the same
with non-contiguous, zero-size and broadcast inputs, and the gradient where
the function has a derivative. Random functions are checked for
reproducibility under a seed instead of equality with the CPU.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import io
import math
import os
import subprocess
import sys
import textwrap
import time
from typing import Any, Callable, Iterator, Optional

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from ._autocompare import _largest_difference, _tolerances

# Inputs tried per function: OpInfo samples first, at most this many.
MAX_INPUTS = 3
# OpInfo samples run per entry while looking for calls of a function.
SAMPLES_PER_ENTRY = 6

_CASTS = {"aten::_to_copy", "aten::to", "aten::_autocast_to_reduced_precision",
          "aten::_autocast_to_full_precision", "aten::clone", "aten::detach",
          "aten::lift_fresh", "aten::alias"}

_FACTORY_ARGUMENTS = {"dtype", "layout", "device", "pin_memory",
                      "memory_format"}


class ConformanceError(AssertionError):
    """The device differs from the CPU (or from a reference)."""


# --------------------------------------------------------------------------
# Cases


@dataclasses.dataclass(frozen=True)
class OperatorCase:
    name: str  # "sub.Tensor"
    kind: str  # "emulate"
    form: str  # "functional", "inplace", "out", "mutable", "scratch"
    listed: str  # the operators.yaml entry
    dtype: str  # "float32"

    def __str__(self) -> str:
        return f"{self.name}-{self.dtype}"


@dataclasses.dataclass(frozen=True)
class CustomCase:
    name: str  # "accel::scaled_add"
    meta: bool
    autograd: bool
    reference: Optional[str]
    dtype: str

    def __str__(self) -> str:
        return f"{self.name}-{self.dtype}"


@dataclasses.dataclass(frozen=True)
class AutocastCase:
    name: str
    policy: str
    message: str

    def __str__(self) -> str:
        return self.name


# --------------------------------------------------------------------------
# Operators and schemas


def overload_of(full_name: str, namespace: str = "aten") -> Any:
    """torch.ops.<namespace>.<name>.<overload> of "name.overload"."""
    if "::" in full_name:
        namespace, full_name = full_name.split("::", 1)
    name, _, overload = full_name.partition(".")
    packet = getattr(getattr(torch.ops, namespace), name)
    return getattr(packet, overload or "default")


def _full_name(func: Any) -> str:
    schema = func._schema
    return schema.name.split("::")[-1] + (
        "." + schema.overload_name if schema.overload_name else "")


def _inputs_of(func: Any) -> list:
    return [a for a in func._schema.arguments if not a.is_out]


def _written(func: Any) -> list[str]:
    return [a.name for a in func._schema.arguments
            if a.alias_info is not None and a.alias_info.is_write]


@functools.lru_cache(maxsize=None)
def functional_of(func: Any) -> Optional[Any]:
    """The functional overload taking `func`'s inputs: `func` itself, the
    overload `sub.Tensor` of `sub_.Tensor` or of `sub.out`, or None."""
    if not _written(func):
        return func
    schema = func._schema
    base = schema.name.split("::")[-1]

    def signature(arguments: list) -> list:
        # Names and types; `self` of an in-place form is `Tensor(a!)`.
        return [(a.name, str(a.type)) for a in arguments]

    inputs = signature(_inputs_of(func))
    for packet_name in ([base[:-1]] if base.endswith("_") else []) + [base]:
        packet = getattr(torch.ops.aten, packet_name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            candidate = getattr(packet, overload)
            if _written(candidate):
                continue
            theirs = signature([a for a in candidate._schema.arguments
                                if a.name not in _FACTORY_ARGUMENTS])
            if theirs == inputs:
                return candidate
    return None


def _bind(func: Any, args: tuple, kwargs: dict) -> dict:
    named = dict(kwargs)
    for argument, value in zip(func._schema.arguments, args):
        named[argument.name] = value
    return named


def _for(func: Any, named: dict) -> dict:
    """`named` restricted to the arguments of `func`."""
    names = {a.name for a in func._schema.arguments}
    return {k: v for k, v in named.items() if k in names}


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


# --------------------------------------------------------------------------
# Inputs from the OpInfo database, recorded at the dispatcher


class _Recorder(TorchDispatchMode):
    """Records the arguments of calls of `wanted` (below autograd and the
    composite decompositions: what a backend receives)."""

    def __init__(self, wanted: set) -> None:
        super().__init__()
        self.wanted = wanted
        self.calls: list[tuple[Any, dict]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.wanted and len(self.calls) < 4 * MAX_INPUTS:
            snapshot = tree_map(
                lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v,
                (args, kwargs))
            self.calls.append((func, _bind(func, *snapshot)))
        return func(*args, **kwargs)


def _stem(name: str) -> str:
    """The word an operator and its OpInfo entries share:
    "_softmax_backward_data" and "nn.functional.softmax" -> "softmax"."""
    name = name.split(".")[-1] if name.startswith("nn.") else name.split(".")[0]
    name = name.strip("_")
    for prefix in ("native_", "fused_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    for suffix in ("_backward_data", "_backward", "_forward", "_out", "_"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name.rstrip("0123456789").strip("_")


@functools.lru_cache(maxsize=None)
def _opinfo_index() -> dict[str, list]:
    from torch.testing._internal.common_methods_invocations import op_db
    index: dict[str, list] = {}
    for op in op_db:
        stems = {_stem(op.name), _stem(op.aten_name or op.name)}
        for alias in getattr(op, "aliases", ()) or ():
            stems.add(_stem(getattr(alias, "name", "")))
        for stem in stems:
            index.setdefault(stem, []).append(op)
    return index


def _run_sample(op: Any, sample: Any, backward: bool) -> None:
    result = op(sample.input, *sample.args, **sample.kwargs)
    if not backward:
        return
    outputs = [t for t in tree_flatten(result)[0]
               if isinstance(t, torch.Tensor) and t.requires_grad]
    if outputs:
        torch.autograd.backward(
            outputs, [torch.randn_like(t) for t in outputs])


def opinfo_inputs(func: Any, dtype: torch.dtype) -> list[tuple[str, dict]]:
    """Arguments of `func` recorded from the OpInfo entries named like it,
    for `dtype`: (origin, named arguments), at most MAX_INPUTS."""
    name = _full_name(func)
    backward = "backward" in name
    found: list[tuple[str, dict]] = []
    seen: set[str] = set()
    for op in _opinfo_index().get(_stem(name), []):
        if dtype not in op.supported_dtypes("cpu"):
            continue
        grad = backward and op.supports_autograd and (
            dtype.is_floating_point or dtype.is_complex)
        if backward and not grad:
            continue
        recorder = _Recorder({func})
        try:
            samples = op.sample_inputs("cpu", dtype, requires_grad=grad)
            for number, sample in enumerate(samples):
                if number >= SAMPLES_PER_ENTRY:
                    break
                try:
                    torch.manual_seed(number)
                    with recorder:
                        _run_sample(op, sample, grad)
                except Exception:  # noqa: BLE001 - the CPU refuses this sample
                    continue
        except Exception:  # noqa: BLE001 - the entry cannot make samples here
            continue
        for number, (_, named) in enumerate(recorder.calls):
            key = describe_inputs(named)
            if key in seen:
                continue
            seen.add(key)
            found.append((f"OpInfo {op.full_name!r}, call {number}", named))
            if len(found) >= MAX_INPUTS:
                return found
    return found


# --------------------------------------------------------------------------
# Inputs generated from the schema

_MISSING = object()
_SHAPES = ((3, 4), (4, 4), (2, 3, 4), (5,), (1, 2, 4, 4), ())


def _tensor(shape: tuple, dtype: torch.dtype, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=generator).to(dtype)
    return torch.randint(-5, 6, shape, generator=generator).to(dtype)


def _index(shape: tuple, seed: int) -> torch.Tensor:
    size = shape[0] if shape else 1
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, max(size, 1), (min(size, 3),), generator=generator)


def _value(argument: Any, shape: tuple, dtype: torch.dtype, seed: int,
           fill_optional: bool = False) -> Any:
    kind = str(argument.type)
    name = argument.name
    if kind.startswith("Optional[") and fill_optional and name not in (
            "generator", "dtype", "layout", "device", "memory_format",
            "pin_memory", "out_dtype"):
        kind = kind[len("Optional["):-1]
    elif argument.has_default_value() and "Tensor" not in kind:
        return argument.default_value
    elif kind.startswith("Optional["):
        return None
    if kind == "Tensor":
        if name == "value":
            return _tensor((), dtype, seed)
        if name in ("index", "indices", "target"):
            return _index(shape, seed)
        if name == "mask":
            return _tensor(shape, torch.bool, seed)
        return _tensor(shape, dtype, seed)
    if kind == "List[Tensor]":
        return [_tensor(shape, dtype, seed), _tensor(shape, dtype, seed + 1)]
    if kind == "List[Optional[Tensor]]":
        return [_index(shape, seed)]
    if kind in ("int", "SymInt"):
        return -1 if "dim" in name else 1
    if kind in ("List[int]", "List[SymInt]"):
        if "dim" in name:
            return [0]
        if name in ("size", "sizes", "shape"):
            return list(shape)
        if name in ("stride", "strides"):
            return list(torch.empty(shape).stride())
        return [1] * max(len(shape), 1)
    if kind == "float":
        return 0.5
    if kind == "number":  # Scalar
        return 2 if not (dtype.is_floating_point or dtype.is_complex) else 0.5
    if kind == "bool":
        return False
    return _MISSING


def schema_inputs(func: Any, dtype: torch.dtype) -> Iterator[tuple[str, dict]]:
    """Arguments of `func` made from its schema, one set per shape tried,
    first with its optional arguments left out, then with them given."""
    for fill in (False, True):
        for number, shape in enumerate(_SHAPES):
            named = {}
            for argument in _inputs_of(func):
                value = _value(argument, shape, dtype, number, fill)
                if value is _MISSING:
                    return
                named[argument.name] = value
            given = ", optional arguments given" if fill else ""
            yield f"generated from the schema, shape {shape}{given}", named


# --------------------------------------------------------------------------
# Running a function on the CPU and on the device


def _call(func: Any, named: dict, device: str, outs: Optional[list],
          noncontiguous: bool = False) -> tuple[Any, list]:
    moved = _move(_for(func, named), device, noncontiguous)
    if outs is not None:
        out_args = [a for a in func._schema.arguments if a.is_out]
        for argument, like in zip(out_args, outs):
            moved[argument.name] = torch.empty(0, dtype=like.dtype, device=device)
    result = func(**moved)
    return result, [moved[name] for name in _written(func) if name in moved]


def _out_likes(func: Any, functional: Optional[Any], named: dict) -> Optional[list]:
    if not any(a.is_out for a in func._schema.arguments):
        return None
    if functional is not None and functional is not func:
        result = functional(**_move(_for(functional, named), "cpu"))
        return [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]
    # No functional form to ask: outputs of the first input's dtype, which
    # the function resizes.
    dtype = next((v.dtype for v in named.values()
                  if isinstance(v, torch.Tensor)), torch.float32)
    count = sum(a.is_out for a in func._schema.arguments)
    return [torch.empty(0, dtype=dtype) for _ in range(count)]


def _is_random(func: Any, functional: Optional[Any]) -> bool:
    tags = set(func.tags) | set(functional.tags if functional else ())
    return torch.Tag.nondeterministic_seeded in tags


def _is_uninitialised(func: Any) -> bool:
    name = func._schema.name.split("::")[-1]
    return name.startswith(("empty", "new_empty")) or name == "resize_"


class Suite:
    """The checks, bound to one backend's backend_spec module."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.device = spec.DEVICE
        self.module = importlib.import_module(spec.PACKAGE)

    # -- cases -------------------------------------------------------------

    def operator_cases(self) -> list[OperatorCase]:
        return [OperatorCase(name, kind, form, listed, dtype)
                for name, kind, form, listed, dtypes in self.spec.OPERATORS
                for dtype in dtypes]

    def custom_cases(self) -> list[CustomCase]:
        return [CustomCase(name, meta, autograd, reference, dtype)
                for name, meta, autograd, reference in self.spec.CUSTOM
                for dtype in self.spec.DTYPES
                if getattr(torch, dtype).is_floating_point]

    def autocast_cases(self) -> list[AutocastCase]:
        return [AutocastCase(*entry) for entry in self.spec.AUTOCAST]

    # -- operators ---------------------------------------------------------

    def inputs(self, func: Any, dtype: torch.dtype) -> list[tuple[str, dict]]:
        """Up to MAX_INPUTS argument sets of `func`'s functional form that
        the CPU accepts."""
        functional = functional_of(func)
        source = functional if functional is not None else func
        found = []
        for origin, named in opinfo_inputs(source, dtype):
            if self._cpu_accepts(func, functional, named):
                found.append((origin, named))
        if not found:
            for origin, named in schema_inputs(source, dtype):
                if self._cpu_accepts(func, functional, named):
                    found.append((origin, named))
                    break
        return found[:MAX_INPUTS]

    def _cpu_accepts(self, func: Any, functional: Optional[Any],
                     named: dict) -> bool:
        try:
            outs = _out_likes(func, functional, named)
            _call(func, named, "cpu", outs)
        except Exception:  # noqa: BLE001 - not an input of this function
            return False
        return True

    def check_operator(self, case: OperatorCase) -> None:
        dtype = getattr(torch, case.dtype)
        func = overload_of(case.name)
        special = _BUILTIN_CHECKS.get(case.name) or _HOOK_CHECKS.get(case.name)
        if special is not None:
            special(self, func, dtype)
            return
        inputs = self.inputs(func, dtype)
        if not inputs:
            pytest.skip(f"the CPU runs {case.name} on none of the inputs "
                        f"tried for {case.dtype} (OpInfo samples and inputs "
                        f"generated from its schema)")
        functional = functional_of(func)
        for number, (origin, named) in enumerate(inputs):
            what = (f"{case.name} ({case.kind}, {case.form}) on "
                    f"{self.device}, {case.dtype}, input {number} ({origin}: "
                    f"{describe_inputs(named)})")
            self.compare(func, functional, named, what)
            if number == 0:
                self._variants(func, functional, named, what)
                if case.form == "functional":
                    self.compare_gradients(func, named, what)

    def compare(self, func: Any, functional: Optional[Any], named: dict,
                what: str, noncontiguous: bool = False) -> None:
        outs = _out_likes(func, functional, named)
        if _is_random(func, functional):
            self._compare_random(func, named, outs, what)
            return
        torch.manual_seed(0)
        try:
            want = _call(func, named, "cpu", outs, noncontiguous)
        except Exception:  # noqa: BLE001 - a variant the CPU refuses
            if not noncontiguous:
                raise
            return
        torch.manual_seed(0)
        try:
            got = _call(func, named, self.device, outs, noncontiguous)
        except Exception as error:  # noqa: BLE001 - reported with the input
            raise ConformanceError(
                f"{what}: the device raised {type(error).__name__}: "
                f"{str(error).strip().splitlines()[0][:300] if str(error).strip() else ''}"
                f" where the CPU ran") from error
        if _is_uninitialised(func):
            _assert_same_metadata(got, want, self.device, what)
        else:
            _assert_same(got, want, self.device, what)

    def _compare_random(self, func: Any, named: dict, outs: Optional[list],
                        what: str) -> None:
        want = _call(func, named, "cpu", outs)
        runs = []
        for _ in range(2):
            torch.manual_seed(1234)
            runs.append(_call(func, named, self.device, outs))
        _assert_same_metadata(runs[0], want, self.device, what)
        _assert_same(runs[1], tree_map(
            lambda v: v.detach().cpu() if isinstance(v, torch.Tensor) else v,
            runs[0]), self.device, what + ": two runs from one seed")

    def _variants(self, func: Any, functional: Optional[Any], named: dict,
                  what: str) -> None:
        tensors = [k for k, v in named.items()
                   if isinstance(v, torch.Tensor) and v.dim() > 0]
        # Non-contiguous: every tensor input with a stride of 2.
        if any(named[k].numel() > 1 for k in tensors):
            self.compare(func, functional, named,
                         what + ", non-contiguous inputs", noncontiguous=True)
        # Zero-size: every tensor input cut to no rows.
        if tensors:
            empty = dict(named)
            for k in tensors:
                empty[k] = named[k][:0]
            if self._cpu_accepts(func, functional, empty):
                self.compare(func, functional, empty,
                             what + ", zero-size inputs "
                             f"({describe_inputs(empty)})")
        # Broadcast (pointwise functions): the second tensor input narrowed
        # to one column.
        same = [k for k in tensors if named[k].shape == named[tensors[0]].shape]
        if (torch.Tag.pointwise in func.tags and len(same) >= 2
                and named[same[1]].shape[-1] > 1):
            narrow = dict(named)
            narrow[same[1]] = named[same[1]][..., :1].contiguous()
            if self._cpu_accepts(func, functional, narrow):
                self.compare(func, functional, narrow,
                             what + f", {same[1]} broadcast "
                             f"({describe_inputs(narrow)})")

    def compare_gradients(self, func: Any, named: dict, what: str) -> None:
        """The gradient of `func` on the device against the CPU's, for the
        floating-point tensor inputs, where the CPU has a derivative."""
        leaves = [k for k, v in named.items() if isinstance(v, torch.Tensor)
                  and v.dtype in (torch.float32, torch.float64)]
        if not leaves or _is_random(func, None):
            return

        def run(device: str):
            moved = _move(_for(func, named), device)
            for k in leaves:
                moved[k] = moved[k].detach().requires_grad_()
            outputs = [t for t in tree_flatten(func(**moved))[0]
                       if isinstance(t, torch.Tensor) and t.requires_grad]
            if not outputs:
                return None
            generator = torch.Generator().manual_seed(7)
            grads_out = [torch.randn(t.shape, generator=generator,
                                     dtype=t.dtype).to(device) for t in outputs]
            return torch.autograd.grad(outputs, [moved[k] for k in leaves],
                                       grads_out, allow_unused=True)

        try:
            want = run("cpu")
        except Exception:  # noqa: BLE001 - no derivative on the CPU
            return
        if want is None:
            return
        try:
            got = run(self.device)
        except Exception as error:  # noqa: BLE001 - reported with the input
            raise ConformanceError(
                f"{what}: the backward raised {type(error).__name__} on the "
                f"device: {str(error).strip()[:300]}") from error
        _assert_same(got, want, self.device, what + ", gradient")

    # -- custom operators --------------------------------------------------

    def check_custom(self, case: CustomCase) -> None:
        dtype = getattr(torch, case.dtype)
        func = overload_of(case.name)
        reference = _resolve(case.reference) if case.reference else None
        checked = False
        for origin, named in schema_inputs(func, dtype):
            what = (f"{case.name} on {self.device}, {case.dtype} ({origin}: "
                    f"{describe_inputs(named)})")
            try:
                got = func(**_move(named, self.device))
            except Exception:  # noqa: BLE001 - not an input of this operator
                continue
            if case.meta:
                meta = func(**_move(named, "meta"))
                _assert_same_metadata(tree_map(_on_meta, got), meta, "meta",
                                      what + ", against its Meta kernel")
            if reference is not None:
                want = reference(*_positional(func, named))
                _assert_same(got, want, self.device,
                             what + f", against {case.reference}")
                if case.autograd:
                    self._custom_gradients(func, reference, named, what)
            checked = True
            break
        assert checked, (f"{case.name} ran on none of the inputs generated "
                         f"from its schema for {case.dtype}")

    def _custom_gradients(self, func: Any, reference: Callable, named: dict,
                          what: str) -> None:
        leaves = [k for k, v in named.items() if isinstance(v, torch.Tensor)
                  and v.is_floating_point()]

        def run(device: str, call: Callable, moved: dict):
            for k in leaves:
                moved[k] = moved[k].detach().requires_grad_()
            outputs = [t for t in tree_flatten(call(moved))[0]
                       if isinstance(t, torch.Tensor) and t.requires_grad]
            grads_out = [torch.ones(t.shape, dtype=t.dtype).to(device)
                         for t in outputs]
            return torch.autograd.grad(outputs, [moved[k] for k in leaves],
                                       grads_out, allow_unused=True)

        want = run("cpu", lambda m: reference(*_positional(func, m)),
                   _move(named, "cpu"))
        got = run(self.device, lambda m: func(**m), _move(named, self.device))
        _assert_same(got, want, self.device, what + ", gradient")

    # -- autocast ----------------------------------------------------------

    def check_autocast(self, case: AutocastCase) -> None:
        """The casts the autocast rule makes, seen at the first operator
        below autocast (which is not run)."""
        lower = getattr(torch, self.spec.AUTOCAST_DTYPE)
        func = overload_of(case.name)
        if case.policy in ("fp32", "fp32_set_opt_dtype", "fp32_append_dtype"):
            given = [lower]
        elif case.policy == "promote":
            given = [torch.float32, lower]
        else:
            given = [torch.float32]
        for shape in ((2, 2), (2, 2, 2), (1, 2, 2, 2), (1, 1, 2, 2, 2), (2,)):
            named = _autocast_inputs(func, shape, given)
            if named is None:
                break
            moved = _move(named, self.device)
            catcher = _FirstKernel()
            try:
                with torch.autocast(self.device, dtype=lower), catcher:
                    func(**moved)
            except _Caught:
                self._autocast_verdict(case, catcher, lower)
                return
            except Exception as error:  # noqa: BLE001 - try the next shape
                if case.policy == "banned" and isinstance(error, RuntimeError):
                    assert case.message.splitlines()[0] in str(error), str(error)
                    return
                continue
            if case.policy == "banned":
                raise ConformanceError(f"{case.name} ran under autocast; its "
                                       f"rule bans it")
        raise ConformanceError(
            f"{case.name}: no input generated from its schema reached a "
            f"kernel under autocast ({func._schema})")

    def _autocast_verdict(self, case: AutocastCase, catcher: "_FirstKernel",
                          lower: torch.dtype) -> None:
        # Autocast's casts come first; casts the operator makes itself may
        # follow them, before its first kernel.
        floats = [v.dtype for v in catcher.tensors if v.is_floating_point()]
        dtypes = [v for v in catcher.scalars if isinstance(v, torch.dtype)]
        first = catcher.casts[0] if catcher.casts else None
        seen = (f"{case.name} ({case.policy}) cast to "
                f"{[str(d)[6:] for d in catcher.casts]} and reached "
                f"{catcher.name} with floating inputs "
                f"{[str(d)[6:] for d in floats]} and dtype arguments "
                f"{[str(d)[6:] for d in dtypes]}")
        if case.policy == "banned":
            raise ConformanceError(f"{seen}; its rule bans it under autocast")
        want = lower if case.policy == "lower_precision_fp" else torch.float32
        if first is not None:
            ok = first == want
        else:
            ok = bool(floats) and all(d == want for d in floats)
        if case.policy in ("fp32_set_opt_dtype", "fp32_append_dtype"):
            ok = ok or torch.float32 in dtypes
        if not ok:
            raise ConformanceError(seen)

    # -- runtime -----------------------------------------------------------

    def unlisted_operator(self) -> Optional[str]:
        """An aten function the spec leaves to the global fallback."""
        registered = {entry[0] for entry in self.spec.OPERATORS}
        for name in ("hypot.out", "atan2.out", "lgamma.out", "erfinv.out",
                     "logaddexp.out", "copysign.out", "fmod.Tensor_out"):
            if name not in registered:
                return name
        return None

    def run_python(self, code: str, env: Optional[dict] = None,
                   timeout: float = 240) -> subprocess.CompletedProcess:
        """`code` in a fresh interpreter with this backend loaded."""
        prelude = (f"import torch, {self.spec.PACKAGE}\n"
                   f"DEVICE = {self.device!r}\n")
        environ = dict(os.environ, **(env or {}))
        return subprocess.run([sys.executable, "-c",
                               prelude + textwrap.dedent(code)],
                              capture_output=True, text=True, env=environ,
                              timeout=timeout)


class _Caught(Exception):
    pass


class _FirstKernel(TorchDispatchMode):
    """Lets the casts through and stops at the first other operator."""

    def __init__(self) -> None:
        super().__init__()
        self.name = ""
        self.tensors: list[torch.Tensor] = []
        self.scalars: list[Any] = []
        self.casts: list[torch.dtype] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func._schema.name in _CASTS:
            result = func(*args, **kwargs)
            if isinstance(result, torch.Tensor):
                self.casts.append(result.dtype)
            return result
        self.name = str(func._schema.name) + (
            "." + func._schema.overload_name if func._schema.overload_name else "")
        leaves = tree_flatten((args, kwargs))[0]
        self.tensors = [v for v in leaves if isinstance(v, torch.Tensor)]
        self.scalars = [v for v in leaves if not isinstance(v, torch.Tensor)]
        raise _Caught()


# Shapes and values of arguments that composite operators check before
# their first kernel: (argument -> shape of a tensor, list of shapes, or a
# value); the rest come from the schema.
_AUTOCAST_ARGUMENTS: dict[str, dict[str, Any]] = {
    "cosine_embedding_loss": {"input1": (2, 3), "input2": (2, 3),
                              "target": (2,)},
    "cross": {"self": (2, 3), "other": (2, 3)},
    "group_norm": {"input": (2, 4, 3), "num_groups": 2, "weight": (4,),
                   "bias": (4,)},
    "gru_cell": {"input": (2, 3), "hx": (2, 4), "w_ih": (12, 3),
                 "w_hh": (12, 4), "b_ih": (12,), "b_hh": (12,)},
    "lstm_cell": {"input": (2, 3), "hx": [(2, 4), (2, 4)], "w_ih": (16, 3),
                  "w_hh": (16, 4), "b_ih": (16,), "b_hh": (16,)},
    "linalg_matrix_norm": {"self": (3, 3), "ord": 1},
    "nuclear_norm.dim": {"self": (3, 3), "dim": [0, 1]},
    "prelu": {"self": (2, 3), "weight": (3,)},
    "rms_norm": {"input": (2, 3), "normalized_shape": [3], "weight": (3,)},
    "scaled_dot_product_attention": {"query": (1, 2, 4, 8), "key": (1, 2, 4, 8),
                                     "value": (1, 2, 4, 8)},
}


def _autocast_inputs(func: Any, shape: tuple, given: list) -> Optional[dict]:
    named = {}
    number = 0
    fixed = _AUTOCAST_ARGUMENTS.get(_full_name(func), {})
    for argument in _inputs_of(func):
        if argument.name in fixed:
            value = fixed[argument.name]
            dtype = given[min(number, len(given) - 1)]
            if isinstance(value, tuple):
                value, number = _tensor(value, dtype, number), number + 1
            elif isinstance(value, list) and value and isinstance(value[0], tuple):
                value = [_tensor(v, dtype, number + i) for i, v in enumerate(value)]
                number += len(value)
            named[argument.name] = value
            continue
        kind = str(argument.type)
        if kind in ("Tensor", "Optional[Tensor]"):
            if kind.startswith("Optional") and argument.name not in (
                    "bias", "weight", "other"):
                named[argument.name] = None
                continue
            named[argument.name] = _tensor(shape, given[min(number, len(given) - 1)],
                                           number)
            number += 1
            continue
        if kind == "List[Tensor]":
            named[argument.name] = [_tensor(shape, given[0], 0),
                                    _tensor(shape, given[-1], 1)]
            number += 2
            continue
        if kind == "List[Optional[Tensor]]":
            named[argument.name] = [_index(shape, 0)]
            continue
        if kind == "str" and not argument.has_default_value():
            named[argument.name] = "ij,jk->ik" if argument.name == "equation" \
                else "fro"
            continue
        value = _value(argument, shape, given[0], number)
        if value is _MISSING:
            return None
        named[argument.name] = value
    return named


def _on_meta(value: Any) -> Any:
    return value.to("meta") if isinstance(value, torch.Tensor) else value


def _positional(func: Any, named: dict) -> list:
    return [named[a.name] for a in _inputs_of(func) if a.name in named]


def _resolve(path: str) -> Callable:
    """The callable `module.attr.attr` names."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            target = getattr(target, attr)
        return target
    raise ImportError(f"cannot import the reference {path!r}")


# --------------------------------------------------------------------------
# The builtin set: allocation, copies, views and storage


def _check_empty(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    for shape in ((2, 3), (0, 4), (2, 3, 4, 5)):
        t = torch.empty(shape, dtype=dtype, device=suite.device)
        assert (t.shape, t.dtype, t.device.type) == (shape, dtype, suite.device)
        assert t.stride() == torch.empty(shape).stride()
    t = torch.empty((2, 3, 4, 5), dtype=dtype, device=suite.device,
                    memory_format=torch.channels_last)
    assert t.stride() == torch.empty((2, 3, 4, 5),
                                     memory_format=torch.channels_last).stride()


def _check_empty_strided(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    t = torch.empty_strided((2, 3), (1, 2), dtype=dtype, device=suite.device)
    assert (t.shape, t.stride(), t.dtype) == ((2, 3), (1, 2), dtype)


def _check_copies(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((4, 5), dtype, 0)
    dev = src.to(suite.device)
    _assert_same(dev, src, suite.device, "host to device copy")
    _assert_same(dev.cpu(), src, "cpu", "device to host copy")
    # Device to device, across dtypes and into a strided destination.
    wide = torch.zeros((4, 10), dtype=dtype, device=suite.device)
    wide[:, ::2].copy_(dev)
    _assert_same(wide[:, ::2], src, suite.device, "copy into a strided view")
    _assert_same(dev.t().contiguous(), src.t().contiguous(), suite.device,
                 "copy of a transposed tensor")
    other = torch.float64 if dtype != torch.float64 else torch.float32
    _assert_same(dev.to(other), src.to(other), suite.device,
                 f"conversion to {other}")
    if suite.module.device_count() > 1:
        second = dev.to(f"{suite.device}:1")
        assert second.device.index == 1
        _assert_same(second, src, suite.device, "copy to device 1")
    # A copy that resizes its destination first.
    out = torch.empty(0, dtype=dtype, device=suite.device)
    torch.ops.aten._copy_from_and_resize(dev, out)
    _assert_same(out, src, suite.device, "_copy_from_and_resize")


def _check_scalar(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((3,), dtype, 0)
    dev = src.to(suite.device)
    for i in range(3):
        assert dev[i].item() == src[i].item() or (
            src[i].item() != src[i].item())


def _check_resize(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((6,), dtype, 0)
    dev = src.to(suite.device)
    dev.resize_(2, 3)
    _assert_same(dev, src.view(2, 3), suite.device, "resize_ keeps the values")
    dev.resize_(4, 5)
    assert dev.shape == (4, 5)
    _assert_same(dev.flatten()[:6], src, suite.device, "resize_ grows in place")
    dev.resize_(0)
    assert dev.numel() == 0


def _check_set(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((6,), dtype, 0)
    dev = src.to(suite.device)
    t = torch.empty(0, dtype=dtype, device=suite.device)
    t.set_(dev)
    _assert_same(t, src, suite.device, "set_(tensor)")
    t = torch.empty(0, dtype=dtype, device=suite.device)
    t.set_(dev.untyped_storage(), 1, (2, 2), (2, 1))
    _assert_same(t, src[1:5].view(2, 2), suite.device,
                 "set_(storage, offset, size, stride)")
    t = torch.empty(0, dtype=dtype, device=suite.device)
    t.set_(dev.untyped_storage())
    _assert_same(t, src, suite.device, "set_(storage)")
    t.set_()
    assert t.numel() == 0 and t.device.type == suite.device


def _check_views(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((4, 6), dtype, 0)
    dev = src.to(suite.device)
    for what, view in (("view", lambda t: t.view(6, 4)),
                       ("as_strided", lambda t: t.as_strided((3, 3), (1, 4), 2)),
                       ("reshape of a transpose", lambda t: t.t().reshape(24)),
                       ("_reshape_alias", lambda t: torch.ops.aten._reshape_alias(
                           t, (2, 12), (12, 1)))):
        got = view(dev)
        _assert_same(got, view(src), suite.device, what)
    shared = dev.view(24)
    shared[0] = src.flatten()[1]
    assert dev[0, 0].item() == src.flatten()[1].item(), "a view shares memory"


# --------------------------------------------------------------------------
# The hook operators, through the public functions that reach them


def _compare_call(suite: Suite, dtype: torch.dtype, what: str,
                  fn: Callable, inputs: list) -> None:
    """fn(*inputs) and its gradient with respect to every floating-point
    input, on the device against the CPU."""
    def run(device: str):
        moved = [t.detach().to(device).requires_grad_(t.is_floating_point())
                 for t in inputs]
        torch.manual_seed(0)
        result = fn(*moved)
        outputs = [t for t in tree_flatten(result)[0]
                   if isinstance(t, torch.Tensor) and t.requires_grad]
        generator = torch.Generator().manual_seed(7)
        grads_out = [torch.randn(t.shape, generator=generator).to(t.dtype)
                     .to(device) for t in outputs]
        grads = torch.autograd.grad(outputs, [t for t in moved if t.requires_grad],
                                    grads_out, allow_unused=True)
        return result, grads

    try:
        want = run("cpu")
    except Exception as error:  # noqa: BLE001 - the CPU refuses this dtype
        pytest.skip(f"the CPU runs {what} on no input in {dtype}: {error}")
    # The CPU decomposes what the device runs fused: round-offs differ.
    _assert_same(run(suite.device), want, suite.device,
                 f"{what} on {suite.device}, {str(dtype)[6:]} (forward, gradient)",
                 loose=True)


def _check_convolution(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    F = torch.nn.functional
    for what, fn, shapes in (
            ("conv1d", lambda x, w, b: F.conv1d(x, w, b, padding=1), ((2, 3, 7), (4, 3, 3), (4,))),
            ("conv2d, stride 2, 2 groups",
             lambda x, w, b: F.conv2d(x, w, b, stride=2, groups=2),
             ((2, 4, 6, 6), (6, 2, 3, 3), (6,))),
            ("conv3d", lambda x, w, b: F.conv3d(x, w, b), ((1, 2, 4, 4, 4), (3, 2, 2, 2, 2), (3,))),
            ("conv_transpose2d, dilation 2",
             lambda x, w, b: F.conv_transpose2d(x, w, b, dilation=2),
             ((2, 3, 5, 5), (3, 4, 3, 3), (4,)))):
        inputs = [_tensor(shape, dtype, i) for i, shape in enumerate(shapes)]
        _compare_call(suite, dtype, what, fn, inputs)


def _check_attention(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    F = torch.nn.functional
    q, k, v = (_tensor((2, 3, 5, 8), dtype, i) for i in range(3))
    mask = _tensor((5, 5), dtype, 3)
    _compare_call(suite, dtype, "scaled_dot_product_attention", F.scaled_dot_product_attention,
                  [q, k, v])
    _compare_call(suite, dtype, "scaled_dot_product_attention, causal",
                  lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                  [q, k, v])
    _compare_call(suite, dtype, "scaled_dot_product_attention, additive mask",
                  F.scaled_dot_product_attention, [q, k, v, mask])


def _check_rnn_cell(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    lstm = "lstm" in func._schema.name
    gates = 4 if lstm else 3
    x, h, c = _tensor((3, 5), dtype, 0), _tensor((3, 6), dtype, 1), _tensor((3, 6), dtype, 2)
    w_ih, w_hh = _tensor((gates * 6, 5), dtype, 3), _tensor((gates * 6, 6), dtype, 4)
    b_ih, b_hh = _tensor((gates * 6,), dtype, 5), _tensor((gates * 6,), dtype, 6)
    if lstm:
        _compare_call(suite, dtype, "lstm_cell",
                      lambda *t: torch.lstm_cell(t[0], (t[1], t[2]), *t[3:]),
                      [x, h, c, w_ih, w_hh, b_ih, b_hh])
    else:
        _compare_call(suite, dtype, "gru_cell", torch.gru_cell,
                      [x, h, w_ih, w_hh, b_ih, b_hh])


_HOOK_CHECKS: dict[str, Callable] = {
    "convolution_overrideable": _check_convolution,
    "convolution_backward_overrideable": _check_convolution,
    "_scaled_dot_product_fused_attention_overrideable": _check_attention,
    "_scaled_dot_product_fused_attention_overrideable_backward": _check_attention,
    "_thnn_fused_lstm_cell": _check_rnn_cell,
    "_thnn_fused_lstm_cell_backward_impl": _check_rnn_cell,
    "_thnn_fused_gru_cell": _check_rnn_cell,
    "_thnn_fused_gru_cell_backward": _check_rnn_cell,
}


_BUILTIN_CHECKS: dict[str, Callable] = {
    "empty.memory_format": _check_empty,
    "empty_strided": _check_empty_strided,
    "_copy_from": _check_copies,
    "_copy_from_and_resize": _check_copies,
    "_local_scalar_dense": _check_scalar,
    "resize_": _check_resize,
    "set_.source_Storage": _check_set,
    "set_.source_Storage_storage_offset": _check_set,
    "set_.source_Tensor": _check_set,
    "set_": _check_set,
    "view": _check_views,
    "as_strided": _check_views,
    "_reshape_alias": _check_views,
}


# The families of the suite: pytest markers.
MARKERS = {
    "operators": "every function the backend registers, against the CPU",
    "custom": "the custom operators, against their reference or Meta kernel",
    "autocast": "the autocast policy of every operator autocast.yaml lists",
    "runtime": "devices, streams, events, memory, RNG, serialization",
    "compile": "torch.compile on the device",
    "distributed": "torch.distributed on the device",
}


def configure(config: Any, spec: Any) -> None:
    """pytest_configure of a backend's suite: the markers, and under
    pytest-xdist a device of its own for each worker (worker i takes device
    i modulo the device count)."""
    for name, what in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {what}")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw"):
        package = importlib.import_module(spec.PACKAGE)
        package.set_device(int(worker[2:]) % package.device_count())


@functools.lru_cache(maxsize=None)
def suite(spec: Any) -> Suite:
    """The one Suite of a backend_spec module."""
    return Suite(spec)


# --------------------------------------------------------------------------
# The runtime


@dataclasses.dataclass(frozen=True)
class RuntimeCase:
    name: str
    marker: str
    check: Callable[[Suite], None]

    def __str__(self) -> str:
        return self.name


def check_devices(suite: Suite) -> None:
    m = suite.module
    assert m.is_available()
    count = m.device_count()
    assert count >= 1
    assert torch.accelerator.device_count() == count
    start = m.current_device()
    try:
        for index in range(count):
            m.set_device(index)
            assert m.current_device() == index
            t = torch.ones(2, device=suite.device)
            assert t.device.index == index, t.device
        m.set_device(0)
        with m.device(count - 1):
            assert m.current_device() == count - 1
        assert m.current_device() == 0
    finally:
        m.set_device(start)
    t = torch.ones(1, device=f"{suite.device}:{count - 1}")
    with m.device_of(t):
        assert m.current_device() == count - 1
    assert m.current_device() == start
    props = m.get_device_properties(0)
    assert props.name and m.get_device_name(0) == props.name


def check_invalid_index(suite: Suite) -> None:
    count = suite.module.device_count()
    for bad in (count, count + 7):
        with pytest.raises((RuntimeError, ValueError, AssertionError)) as info:
            torch.ones(1, device=f"{suite.device}:{bad}")
        assert str(bad) in str(info.value), str(info.value)
        with pytest.raises((RuntimeError, ValueError, AssertionError)):
            suite.module.set_device(bad)


def check_stream_ordering(suite: Suite) -> None:
    m = suite.module
    side = m.Stream()
    assert side != m.current_stream()
    assert m.current_stream() == m.default_stream()
    x = torch.randn(256, 256)
    a = x.to(suite.device)
    # Work on the side stream after the current stream's work, then back.
    side.wait_stream(m.current_stream())
    with m.stream(side):
        assert m.current_stream() == side
        b = a @ a + 1
        done = m.Event()
        done.record(side)
    m.current_stream().wait_event(done)
    b.record_stream(m.current_stream())
    got = (b * 2).cpu()
    torch.testing.assert_close(got, (x @ x + 1) * 2, rtol=1e-4, atol=1e-3)
    side.synchronize()
    assert side.query() and done.query()
    m.synchronize()


def check_events(suite: Suite) -> None:
    # Timed events bracket work the device certainly spends time on: their
    # elapsed time is more than zero (a driver whose timed events all report
    # 0 ms fails here) and no more than the host saw pass between recording
    # the first and the second having completed.
    m = suite.module
    x = torch.randn(256, 256, device=suite.device)
    m.synchronize()
    start = m.Event(enable_timing=True)
    end = m.Event(enable_timing=True)
    host_start = time.perf_counter()
    start.record()
    for _ in range(10):
        x = x @ x.tanh()
    end.record()
    end.synchronize()
    host_ms = (time.perf_counter() - host_start) * 1000.0
    assert start.query() and end.query()
    elapsed = start.elapsed_time(end)
    assert elapsed > 0.0, (
        f"timed events around ten 256x256 matmuls report {elapsed} ms")
    assert elapsed <= host_ms * 1.1 + 1.0, (
        f"timed events report {elapsed:.3f} ms for work the host saw take "
        f"{host_ms:.3f} ms")
    untimed = m.Event()
    untimed.record()
    untimed.synchronize()
    with pytest.raises((RuntimeError, ValueError)):
        untimed.elapsed_time(end)


def check_memory_statistics(suite: Suite) -> None:
    m = suite.module
    m.synchronize()
    m.reset_peak_memory_stats()
    before = m.memory_allocated()
    t = torch.empty(1 << 20, dtype=torch.uint8, device=suite.device)
    assert m.memory_allocated() >= before + (1 << 20)
    assert m.max_memory_allocated() >= m.memory_allocated()
    assert m.memory_reserved() >= m.memory_allocated()
    stats = m.memory_stats()
    assert stats["allocated_bytes.all.current"] == m.memory_allocated()
    del t
    assert m.memory_allocated() == before
    assert m.max_memory_allocated() >= before + (1 << 20)
    free, total = m.mem_get_info()
    assert 0 <= free <= total


def check_empty_cache(suite: Suite) -> None:
    m = suite.module
    m.synchronize()
    before = m.memory_reserved()
    t = torch.empty(8 << 20, dtype=torch.uint8, device=suite.device)
    assert m.memory_reserved() >= before + (8 << 20)
    del t
    m.synchronize()
    m.empty_cache()
    # Every unused cached block went back, the freed one with them.
    assert m.memory_reserved() <= before, (m.memory_reserved(), before)


def check_out_of_memory(suite: Suite) -> None:
    m = suite.module
    total = m.mem_get_info()[1]
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(total + (1 << 30), dtype=torch.uint8, device=suite.device)
    assert suite.device in str(info.value).lower() or "memory" in str(info.value)
    # The device still works.
    x = torch.arange(4.0, device=suite.device) * 2
    assert x.cpu().tolist() == [0.0, 2.0, 4.0, 6.0]


def check_pinned_memory(suite: Suite) -> None:
    host = torch.empty(1024, pin_memory=True)
    assert host.is_pinned()
    assert not torch.empty(8).is_pinned()
    host.copy_(torch.arange(1024.0))
    dev = host.to(suite.device, non_blocking=True)
    back = torch.empty(1024, pin_memory=True)
    back.copy_(dev, non_blocking=True)
    suite.module.synchronize()
    assert back.tolist() == host.tolist()
    assert torch.arange(3.0).pin_memory().is_pinned()


def check_rng(suite: Suite) -> None:
    m = suite.module
    m.manual_seed(42)
    a = torch.rand(100, device=suite.device)
    m.manual_seed(42)
    b = torch.rand(100, device=suite.device)
    assert torch.equal(a.cpu(), b.cpu()), "manual_seed does not repeat draws"
    assert m.initial_seed() == 42
    state = m.get_rng_state()
    c = torch.randn(50, device=suite.device)
    m.manual_seed(7)
    m.set_rng_state(state)
    d = torch.randn(50, device=suite.device)
    assert torch.equal(c.cpu(), d.cpu()), "set_rng_state does not restore"
    m.manual_seed(43)
    e = torch.rand(100, device=suite.device)
    assert not torch.equal(a.cpu(), e.cpu()), "two seeds give the same draws"
    generator = torch.Generator(device=suite.device).manual_seed(3)
    f = torch.rand(10, device=suite.device, generator=generator)
    generator.manual_seed(3)
    g = torch.rand(10, device=suite.device, generator=generator)
    assert torch.equal(f.cpu(), g.cpu())
    states = m.get_rng_state_all()
    assert len(states) == m.device_count()
    m.set_rng_state_all(states)
    torch.manual_seed(42)  # seeds the device too
    h = torch.rand(100, device=suite.device)
    assert torch.equal(h.cpu(), a.cpu())


def check_serialization(suite: Suite) -> None:
    src = {"w": torch.randn(3, 4), "n": torch.arange(5)}
    dev = {k: v.to(suite.device) for k, v in src.items()}
    buffer = io.BytesIO()
    torch.save(dev, buffer)
    for location, want in ((None, suite.device), ("cpu", "cpu"),
                           (torch.device(suite.device, 0), suite.device)):
        buffer.seek(0)
        loaded = torch.load(buffer, map_location=location)
        for k, v in src.items():
            assert loaded[k].device.type == want, (location, loaded[k].device)
            assert torch.equal(loaded[k].cpu(), v)
    if suite.module.device_count() > 1:
        buffer.seek(0)
        loaded = torch.load(buffer, map_location={f"{suite.device}:0":
                                                  f"{suite.device}:1"})
        assert loaded["w"].device.index == 1
    # A module's state dict, loaded back into a module on the device.
    model = torch.nn.Linear(4, 2).to(suite.device)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    copy = torch.nn.Linear(4, 2).to(suite.device)
    copy.load_state_dict(torch.load(buffer))
    assert torch.equal(copy.weight.cpu(), model.weight.cpu())


def check_accelerator(suite: Suite) -> None:
    acc = torch.accelerator
    assert acc.is_available()
    assert acc.current_accelerator().type == suite.device
    assert acc.device_count() == suite.module.device_count()
    start = acc.current_device_index()
    try:
        acc.set_device_index(acc.device_count() - 1)
        assert suite.module.current_device() == acc.device_count() - 1
    finally:
        acc.set_device_index(start)
    stream = acc.current_stream()
    assert stream.device.type == suite.device
    acc.synchronize()
    assert torch.device(suite.device).type == suite.device
    assert getattr(torch, suite.device) is suite.module


def check_fallback_policy(suite: Suite) -> None:
    """The global fallback of backend.yaml, on a function the spec leaves to
    it, and the functions the spec gives `kind: fallback`."""
    m = suite.module
    name = suite.unlisted_operator()
    assert name is not None, "every candidate function is registered"
    func = overload_of(name)
    a, b = torch.rand(4, 3) + 0.5, torch.rand(4, 3) + 0.5
    args = {"self": a, "other": b}
    before = m.fallback_counts()
    if suite.spec.FALLBACK == "error":
        with pytest.raises(NotImplementedError) as info:
            _call(func, args, suite.device, [a])
        assert f"aten::{name}" in str(info.value), str(info.value)
    else:
        got = _call(func, args, suite.device, [a])
        want = _call(func, args, "cpu", [a])
        _assert_same(got, want, suite.device, f"{name} through the fallback")
        after = m.fallback_counts().get(suite.spec.FALLBACK, {})
        count = after.get(f"aten::{name}", 0)
        assert count == before.get(suite.spec.FALLBACK, {}).get(
            f"aten::{name}", 0) + 1, after
    for name, kind, *_ in suite.spec.OPERATORS:
        if kind != "fallback":
            continue
        func = overload_of(name)
        inputs = suite.inputs(func, torch.float32)
        if not inputs:
            continue
        before = m.fallback_counts().get("cpu", {}).get(f"aten::{name}", 0)
        suite.compare(func, functional_of(func), inputs[0][1],
                      f"{name} (kind fallback)")
        after = m.fallback_counts().get("cpu", {}).get(f"aten::{name}", 0)
        assert after > before, f"{name} did not run through the CPU fallback"


def check_autocast_basics(suite: Suite) -> None:
    lower = getattr(torch, suite.spec.AUTOCAST_DTYPE)
    assert torch.amp.is_autocast_available(suite.device)
    with torch.autocast(suite.device, dtype=lower):
        assert torch.is_autocast_enabled(suite.device)
        assert torch.get_autocast_dtype(suite.device) == lower
    assert not torch.is_autocast_enabled(suite.device)
    assert lower in suite.module.get_amp_supported_dtype()


def check_compile(suite: Suite) -> None:
    def step(x, w):
        return torch.nn.functional.gelu(x @ w).sum(dim=-1) * 0.5

    compiled = torch.compile(step)
    x, w = torch.randn(8, 16), torch.randn(16, 4)
    got = compiled(x.to(suite.device), w.to(suite.device))
    _assert_same(got, step(x, w), suite.device, "torch.compile")
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 2))
    reference = model(x)
    device_model = torch.compile(model.to(suite.device))
    out = device_model(x.to(suite.device))
    torch.testing.assert_close(out.detach().cpu(), reference.detach(),
                               rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert model[0].weight.grad is not None


def check_distributed(suite: Suite) -> None:
    """A one-rank group on the device's own collectives backend, in a fresh
    interpreter (a process group is process state)."""
    r = suite.run_python("""
        import torch.distributed as dist
        store = dist.HashStore()
        dist.init_process_group(store=store, rank=0, world_size=1)
        assert dist.get_backend() != "gloo", dist.get_backend()
        x = torch.arange(6.0, device=DEVICE)
        dist.all_reduce(x)
        assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        dist.broadcast(x, 0)
        gathered = [torch.empty_like(x)]
        dist.all_gather(gathered, x)
        assert torch.equal(gathered[0].cpu(), x.cpu())
        model = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Linear(4, 2).to(DEVICE))
        model(torch.randn(3, 4, device=DEVICE)).sum().backward()
        dist.destroy_process_group()
        print("distributed ok")
    """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "distributed ok" in r.stdout


def runtime_cases(spec: Any) -> list[RuntimeCase]:
    cases = [
        RuntimeCase("devices", "runtime", check_devices),
        RuntimeCase("invalid_device_index", "runtime", check_invalid_index),
        RuntimeCase("stream_ordering", "runtime", check_stream_ordering),
        RuntimeCase("events", "runtime", check_events),
        RuntimeCase("memory_statistics", "runtime", check_memory_statistics),
        RuntimeCase("empty_cache", "runtime", check_empty_cache),
        RuntimeCase("out_of_memory", "runtime", check_out_of_memory),
        RuntimeCase("rng", "runtime", check_rng),
        RuntimeCase("serialization", "runtime", check_serialization),
        RuntimeCase("accelerator", "runtime", check_accelerator),
        RuntimeCase("fallback_policy", "runtime", check_fallback_policy),
        RuntimeCase("compile", "compile", check_compile),
        RuntimeCase("distributed", "distributed", check_distributed),
    ]
    if spec.FEATURES.get("pinned_memory"):
        cases.append(RuntimeCase("pinned_memory", "runtime", check_pinned_memory))
    if spec.FEATURES.get("autocast"):
        cases.append(RuntimeCase("autocast", "autocast", check_autocast_basics))
    return cases
