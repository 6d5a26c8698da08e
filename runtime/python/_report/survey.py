"""The operator survey: every ATen operator overload the installed torch
registers, by the path it takes on this backend.

Note [How the survey classifies an operator]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The path is read from two sources, nothing is guessed from names: the
backend's specs (its ``_backend_spec`` module: every function it registers
and with which kind) and torch's dispatcher (which keys an operator has a
kernel for). In order, the first that holds decides:

1. The specs list the function and the dispatcher has a PrivateUse1 kernel
   for it: the kind's path (kernel, stub, builtin, hook, emulate; kind
   ``fallback`` is the CPU fallback). On a device whose memory the host
   cannot address, ``emulate`` entries run through the CPU fallback with
   copies (Note [Host access] in runtime/src/Driver.cpp).
2. The dispatcher has a PrivateUse1 kernel the specs do not list: "other
   kernel" (registered by torch or by another library for the key).
3. A composite kernel (CompositeImplicitAutograd, CompositeExplicitAutograd,
   CompositeExplicitAutogradNonFunctional): "composite"; the operator
   decomposes into others, which the survey classifies in their own rows.
4. Otherwise the backend's global fallback (backend.yaml ``fallback:``)
   receives it. Both the emulate and the CPU fallback run torch's CPU
   kernel, so an operator without one (CUDA-only, or Meta-only) is "not
   implemented"; so is every operator under ``fallback: error``.
"""
from __future__ import annotations

from typing import Any

import torch

# The paths, in the order the report lists them, with what each means.
PATHS = {
    "kernel": "the vendor's kernel (kind: kernel)",
    "stub": "a DispatchStub kernel in ATen's loop (kind: stub)",
    "builtin": "the runtime's tensor plumbing (kind: builtin)",
    "hook": "a hook operator of the runtime (convolution, attention, RNN)",
    "emulate": "the emulation engine, listed (kind: emulate)",
    "emulate fallback": "the emulation engine, through the global fallback",
    "other kernel": "a PrivateUse1 kernel the specs do not list",
    "composite": "decomposes into other operators",
    "cpu fallback": "the CPU, with its arguments and results copied",
    "not implemented": "raises on the device",
}
# Where the operator's own work runs on the device (or, on the emulator, on
# device memory): a move from one of these to the others is a regression.
ON_DEVICE = ("kernel", "stub", "builtin", "hook", "emulate",
             "emulate fallback", "other kernel")
# How bad a path is for the diff: lower is better; composite is neutral.
RANK = {path: 0 for path in ON_DEVICE}
RANK.update({"composite": 0, "cpu fallback": 1, "not implemented": 2})

_COMPOSITE_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd",
                   "CompositeExplicitAutogradNonFunctional")
_KIND_PATHS = {"kernel": "kernel", "stub": "stub", "builtin": "builtin",
               "hook": "hook", "emulate": "emulate", "fallback": "cpu fallback"}


def aten_overloads() -> list[str]:
    """Every ATen overload torch's dispatcher knows ("aten::add.Tensor"):
    those of native_functions.yaml and the out= overloads torchgen derives
    from its `autogen:` entries."""
    return sorted(name for name in torch._C._dispatch_get_all_op_names()
                  if name.startswith("aten::"))


def classify(spec: Any, host_addressable: bool) -> dict[str, dict[str, Any]]:
    """{"aten::add.Tensor": {"path": "kernel", "kind": "kernel"}, ...} for
    every overload (Note [How the survey classifies an operator])."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    kinds = {f"aten::{name}": kind for name, kind, *_ in spec.OPERATORS}
    fallback = spec.FALLBACK
    if fallback == "emulate" and not host_addressable:
        fallback = "cpu" if spec.FEATURES.get("host_copies") else "error"
    survey = {}
    for name in aten_overloads():
        kind = kinds.get(name)
        row: dict[str, Any] = {"kind": kind}
        if kind is not None and has(name, "PrivateUse1"):
            path = _KIND_PATHS[kind]
            if path == "emulate" and not host_addressable:
                path = "cpu fallback"
        elif has(name, "PrivateUse1"):
            path = "other kernel"
        elif any(has(name, key) for key in _COMPOSITE_KEYS):
            path = "composite"
        elif fallback == "error" or not has(name, "CPU"):
            path = "not implemented"
        else:
            path = {"emulate": "emulate fallback", "cpu": "cpu fallback"}[fallback]
        row["path"] = path
        row["family"] = family(name)
        survey[name] = row
    return survey


_PREFIX_FAMILIES = (("_foreach_", "foreach"), ("linalg_", "linear algebra"),
                    ("_linalg_", "linear algebra"), ("fft_", "fft"),
                    ("_fft_", "fft"), ("special_", "special functions"),
                    ("_nested", "nested"), ("_sparse", "sparse"),
                    ("sparse_", "sparse"), ("_to_sparse", "sparse"),
                    ("quantize", "quantized"), ("q_", "quantized"),
                    ("_fake_quant", "quantized"), ("fake_quant", "quantized"))
FAMILIES = ("pointwise", "reductions and scans", "linear algebra", "fft",
            "special functions", "views", "factories", "backward", "foreach",
            "sparse", "quantized", "nested", "other")


def family(name: str) -> str:
    """The family an overload belongs to in the report's charts: a prefix of
    ATen's (linalg_, fft_, special_, _foreach_, sparse, quantized, nested),
    else its tags and schema (pointwise, reductions and scans, views,
    factories, backward), else "other"."""
    base = name[len("aten::"):].split(".")[0]
    for prefix, group in _PREFIX_FAMILIES:
        if base.startswith(prefix):
            return group
    if "backward" in base:
        return "backward"
    op, _, overload = name[len("aten::"):].partition(".")
    func = getattr(getattr(torch.ops.aten, op), overload or "default")
    if torch.Tag.pointwise in func.tags:
        return "pointwise"
    schema = func._schema
    if any(r.alias_info is not None and not r.alias_info.is_write
           for r in schema.returns):
        return "views"
    if not any("Tensor" in str(a.type) for a in schema.arguments):
        return "factories"
    if torch.Tag.reduction in func.tags or base.startswith(("cum", "logcum")):
        return "reductions and scans"
    return "other"


def counts(survey: dict[str, dict[str, Any]]) -> dict[str, int]:
    """How many overloads take each path."""
    result = {path: 0 for path in PATHS}
    for row in survey.values():
        result[row["path"]] += 1
    return result
