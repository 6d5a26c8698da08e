"""What the suite checks: its cases, and what it reads of an operator's
schema."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional


import torch

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


