"""How the example backend registers its operators, seen through the
dispatcher: every entry of specs/operators.yaml, by kind, lands in the
generated file of its kind, the group siblings with it, the custom operator
on its keys, the autocast rules on AutocastPrivateUse1, and the global
fallback on PrivateUse1.
"""
import os
import pathlib
import re

import pytest
import torch
import yaml

_REPO = pathlib.Path(__file__).resolve().parents[2]
SPECS = pathlib.Path(os.environ.get("ACCGEN_TEST_SPECS", _REPO / "specs"))

# The generated file that registers each kind (the dispatcher records the
# file and line of every registration).
KIND_FILE = {
    "builtin": r"runtime/src/Builtin\.cpp",
    "emulate": r"csrc/ops/RegisterEmulate_\d+\.cpp",
    "kernel": r"csrc/ops/RegisterKernels\.cpp",
    "stub": r"csrc/ops/RegisterStubs\.cpp",
    "fallback": r"csrc/ops/RegisterFallback\.cpp",
}


def load(name):
    path = SPECS / name
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


OPERATORS = load("operators.yaml")
AUTOCAST = load("autocast.yaml")


def qualified(op):
    return op if "::" in op else "aten::" + op


def registered_at(op, key="PrivateUse1"):
    """The file:line the dispatcher records for op's kernel on `key`."""
    table = torch._C._dispatch_dump(qualified(op))
    for line in table.splitlines():
        if line.startswith(key + ":"):
            return line
    return None


def entries():
    for entry in OPERATORS.get("operators", []):
        yield pytest.param(entry, id=entry["op"])


@pytest.mark.parametrize("entry", list(entries()))
def test_every_listed_operator_is_registered_by_its_kind(device, entry):
    op = entry["op"]
    assert torch._C._dispatch_has_kernel_for_dispatch_key(
        qualified(op), "PrivateUse1"), f"{op} has no PrivateUse1 kernel"
    where = registered_at(op)
    assert where is not None
    assert re.search(KIND_FILE[entry["kind"]], where), (op, where)


# Group siblings registered through an entry (group defaults to true), and
# siblings that stay with their own kernels.
GROUPS = [
    ("add.out", "kernel", ["add.Tensor", "add_.Tensor"]),
    ("fill_.Scalar", "kernel", ["fill.Scalar"]),
    ("relu", "kernel", ["relu_"]),
    ("sub.Tensor", "emulate", ["sub_.Tensor", "sub.out"]),
    ("max.dim", "emulate", ["max.dim_max"]),
    ("uniform_", "emulate", []),
    ("cumsum", "emulate", ["cumsum_", "cumsum.out"]),
    ("logcumsumexp", "fallback", ["logcumsumexp.out"]),
]


@pytest.mark.parametrize("op,kind,siblings", GROUPS, ids=[g[0] for g in GROUPS])
def test_group_siblings_are_registered_with_their_operator(device, op, kind,
                                                           siblings):
    listed = {e["op"]: e for e in OPERATORS.get("operators", [])}
    if op not in listed:
        pytest.skip(f"{op} is not in this spec")
    assert listed[op]["kind"] == kind
    for sibling in siblings:
        where = registered_at(sibling)
        assert where is not None, f"{sibling} is not registered"
        assert re.search(KIND_FILE[kind], where), (sibling, where)


def test_unlisted_operators_reach_the_global_fallback(device):
    assert torch._C._dispatch_has_backend_fallback(
        torch._C.DispatchKey.PrivateUse1)
    # lgamma is not in the spec: no kernel of its own, the fallback runs it.
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(
        "aten::lgamma", "PrivateUse1")


def test_custom_operators_are_defined_with_every_kernel(device):
    customs = OPERATORS.get("custom", [])
    if not customs:
        pytest.skip("no custom operators in this spec")
    namespace = load("backend.yaml").get("namespace", device)
    for entry in customs:
        name = entry["schema"].split("(")[0]
        op = f"{namespace}::{name}"
        schema = torch._C._dispatch_dump(op)
        assert entry["schema"].split("->")[0].split("(")[1][:10] in schema
        assert re.search(r"csrc/ops/CustomOps\.cpp", registered_at(op))
        if entry.get("meta", True):
            assert re.search(r"csrc/ops/CustomOps\.cpp", registered_at(op, "Meta"))
        if entry.get("autograd", False):
            where = registered_at(op, "AutogradPrivateUse1")
            assert where and "CustomOps.cpp" in where, where


def test_autocast_rules_are_registered(device):
    policies = AUTOCAST.get("policies") or {}
    # `banned` entries are maps {op, message}; the other policies list names.
    rules = [op["op"] if isinstance(op, dict) else op
             for ops in policies.values() for op in (ops or [])]
    if not rules:
        pytest.skip("no autocast rules in this spec")
    for op in rules:
        where = registered_at(op, "AutocastPrivateUse1")
        assert where and "Autocast.cpp" in where, (op, where)
    # Everything else falls through the autocast key.
    assert torch._C._dispatch_has_backend_fallback(
        torch._C.DispatchKey.AutocastPrivateUse1)
