"""The inputs of an operator: from torch's OpInfo database, else from its
schema."""
from __future__ import annotations

import functools
import itertools
from typing import Any, Iterator, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .cases import MAX_INPUTS, SAMPLES_PER_ENTRY, _bind, _full_name, _inputs_of
from .compare import describe_inputs

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


# Note [OpInfo samples without torch's tracking]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# `OpInfo.sample_inputs` wraps an entry's samples in torch's TrackedInputIter
# (torch/testing/_internal/common_utils.py), made for torch's unittest
# classes: it walks the interpreter's stack (`inspect.stack()`, which reads
# the source of every frame) to find the running TestCase, and calls
# `torch.manual_seed` before every sample, which queues a lazy seeding with a
# formatted stack for every device type torch knows and has not initialised
# (CUDA, XPU, MTIA). Together about a quarter of a second a call, three
# quarters of this suite's time. The checks here draw from the entry's
# sample function itself, all the samples they use in one go from one seed
# (so that what runs between two samples, which seeds the generators again,
# does not make a later sample repeat an earlier one's values), and seed
# only the generators they use: the CPU's, and the device's where the device
# draws.


def opinfo_samples(op: Any, device: str, dtype: torch.dtype,
                   requires_grad: bool = False,
                   limit: Optional[int] = None) -> list:
    """The first `limit` samples (all, without one) of OpInfo entry `op`,
    drawn together from the same seed on every call (Note [OpInfo samples
    without torch's tracking])."""
    torch.random.default_generator.manual_seed(0)
    return list(itertools.islice(
        op.sample_inputs_func(op, device, dtype, requires_grad), limit))


def seed(device: str, value: int) -> None:
    """Seeds the CPU's generator and the device's, what `torch.manual_seed`
    does for them (Note [OpInfo samples without torch's tracking])."""
    torch.random.default_generator.manual_seed(value)
    getattr(torch, device).manual_seed_all(value)


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
            samples = opinfo_samples(op, "cpu", dtype, grad, SAMPLES_PER_ENTRY)
            for number, sample in enumerate(samples):
                try:
                    torch.random.default_generator.manual_seed(number)
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


_SPECIAL_VALUES = (float("nan"), float("inf"), float("-inf"), -0.0)


def with_special_values(t: torch.Tensor) -> torch.Tensor:
    """A copy of the floating-point tensor `t`, in its strides, whose first
    elements are NaN, +inf, -inf and -0.0."""
    t = t.clone()
    dense = t.contiguous()
    flat = dense.view(-1)
    count = min(flat.numel(), len(_SPECIAL_VALUES))
    flat[:count] = torch.tensor(_SPECIAL_VALUES[:count], dtype=t.dtype)
    if dense.data_ptr() != t.data_ptr():
        t.copy_(dense)
    return t


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


