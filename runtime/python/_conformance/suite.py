"""The Suite: how one operator, custom operator or autocast policy is
checked."""
from __future__ import annotations

import functools
import importlib
import os
import subprocess
import sys
import textwrap
from typing import Any, Callable, Optional

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .cases import (
    AutocastCase, ConformanceError, CustomCase, MAX_INPUTS, OperatorCase,
    _CASTS, _for, _full_name, _inputs_of, _written, functional_of,
    overload_of,
)
from .compare import (
    _assert_same, _assert_same_metadata, _move, describe_inputs,
)
from .families import _BUILTIN_CHECKS, _HOOK_CHECKS
from .inputs import (
    _MISSING, _index, _tensor, _value, opinfo_inputs, schema_inputs, seed,
    with_special_values,
)

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
        varied = False
        for number, (origin, named) in enumerate(inputs):
            what = (f"{case.name} ({case.kind}, {case.form}) on "
                    f"{self.device}, {case.dtype}, input {number} ({origin}: "
                    f"{describe_inputs(named)})")
            self.compare(func, functional, named, what)
            # The variants of the first input with a tensor of one dimension
            # or more (OpInfo samples often start with a 0-dim tensor).
            if not varied:
                varied = self._variants(func, functional, named, what)
            if number == 0 and case.form == "functional":
                self.compare_gradients(func, named, what)

    def compare(self, func: Any, functional: Optional[Any], named: dict,
                what: str, noncontiguous: bool = False) -> None:
        outs = _out_likes(func, functional, named)
        if _is_random(func, functional):
            self._compare_random(func, named, outs, what)
            return
        seed(self.device, 0)
        try:
            want = _call(func, named, "cpu", outs, noncontiguous)
        except Exception:  # noqa: BLE001 - a variant the CPU refuses
            if not noncontiguous:
                raise
            return
        seed(self.device, 0)
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
            seed(self.device, 1234)
            runs.append(_call(func, named, self.device, outs))
        _assert_same_metadata(runs[0], want, self.device, what)
        _assert_same(runs[1], tree_map(
            lambda v: v.detach().cpu() if isinstance(v, torch.Tensor) else v,
            runs[0]), self.device, what + ": two runs from one seed")

    def _variants(self, func: Any, functional: Optional[Any], named: dict,
                  what: str) -> bool:
        """Runs the variants of the input `named`; False when it has no
        tensor of one dimension or more to vary."""
        tensors = [k for k, v in named.items()
                   if isinstance(v, torch.Tensor) and v.dim() > 0]
        if not tensors:
            return False
        # Non-contiguous: every tensor input with a stride of 2.
        if any(named[k].numel() > 1 for k in tensors):
            self.compare(func, functional, named,
                         what + ", non-contiguous inputs", noncontiguous=True)
        # Zero-size: every tensor input cut to no rows.
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
        # Special values (pointwise functions): NaN, infinities and -0.0 in
        # every floating-point tensor input, which a hand-written kernel
        # must treat as the CPU does (a NaN through relu stays NaN).
        floating = [k for k in tensors if named[k].is_floating_point()]
        if torch.Tag.pointwise in func.tags and floating:
            special = dict(named)
            for k in floating:
                special[k] = with_special_values(named[k])
            if self._cpu_accepts(func, functional, special):
                self.compare(func, functional, special,
                             what + ", NaN, infinities and -0.0 in "
                             + ", ".join(floating))
        return True

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




# The families of the suite: pytest markers.
MARKERS = {
    "operators": "every function the backend registers, against the CPU",
    "custom": "the custom operators, against their reference or Meta kernel",
    "autocast": "the autocast policy of every operator autocast.yaml lists",
    "runtime": "devices, streams, events, memory, RNG, serialization",
    "compile": "torch.compile on the device",
    "distributed": "torch.distributed on the device",
    "integrations": "DeepSpeed, Lightning and accelerate on the device",
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


