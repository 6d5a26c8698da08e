"""The autocast lists `accgen init` writes, and the example's, are CUDA's.

CUDA's lists are read from the installed torch: the AT_FORALL_* macros of
include/ATen/autocast_mode.h give each policy's operators, and the
dispatcher's AutocastCUDA registrations give the whole set, which adds the
operators autocast_mode.cpp registers for CUDA by hand (two cuDNN
convolutions in lower precision, the banned binary_cross_entropy).

Needs ACCGEN_BIN for the `accgen init` half; scripts/test.sh sets it.
"""
import os
import pathlib
import re
import subprocess

import pytest
import torch
import yaml

ACCGEN = os.environ.get("ACCGEN_BIN")
_REPO = pathlib.Path(__file__).resolve().parents[2]
_HEADER = pathlib.Path(torch.__file__).parent / "include/ATen/autocast_mode.h"

# policy -> the macro of autocast_mode.h that lists its operators.
_MACROS = {
    "lower_precision_fp": "AT_FORALL_LOWER_PRECISION_FP",
    "fp32": "AT_FORALL_FP32",
    "fp32_set_opt_dtype": "AT_FORALL_FP32_SET_OPT_DTYPE",
    "fp32_append_dtype": "AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE",
    "promote": "AT_FORALL_PROMOTE",
}


def _macro_body(text, macro):
    match = re.search(r"#define " + macro + r"\(_\)((?:[^\n]*\\\n)*[^\n]*)",
                      text)
    assert match, f"{macro} is not defined in {_HEADER}"
    return match.group(1).replace("\\\n", " ")


def _operators(policy, body):
    if policy == "fp32_append_dtype":
        # _(ADD_NS(norm), "norm.Scalar", <signatures>, fp32_append_dtype)
        return re.findall(r'"([A-Za-z0-9_.]+)"', body)
    # _(name) or _(name, overload)
    return [".".join(p.strip() for p in args.split(","))
            for args in re.findall(r"_\(([^()]*)\)", body)]


def header_lists():
    text = _HEADER.read_text(encoding="utf-8")
    return {policy: _operators(policy, _macro_body(text, macro))
            for policy, macro in _MACROS.items()}


def cuda_registrations():
    names = torch._C._dispatch_get_registrations_for_dispatch_key(
        "AutocastCUDA")
    return {n.removeprefix("aten::") for n in names if n.startswith("aten::")}


def spec_lists(path):
    with open(path, encoding="utf-8") as f:
        spec = yaml.safe_load(f)
    policies = spec["policies"]
    lists = {policy: list(policies.get(policy) or []) for policy in _MACROS}
    banned = {e["op"]: e["message"] for e in policies.get("banned") or []}
    return spec.get("dtype", "float16"), lists, banned


@pytest.fixture(scope="module")
def cuda():
    """CUDA's lists: each policy's header list and the operators
    autocast_mode.cpp registers beyond them."""
    lists = header_lists()
    for policy, ops in lists.items():
        assert ops, f"no operators parsed for {policy}"
        assert len(ops) == len(set(ops)), f"{policy} lists an operator twice"
    from_header = set().union(*map(set, lists.values()))
    registered = cuda_registrations()
    # The parse is right: every operator it found has an AutocastCUDA kernel.
    assert from_header <= registered, sorted(from_header - registered)
    return lists, registered - from_header


@pytest.fixture(scope="module")
def init_spec(tmp_path_factory):
    if not ACCGEN:
        pytest.skip("set ACCGEN_BIN (scripts/test.sh does) to run accgen init")
    project = tmp_path_factory.mktemp("defaults") / "castcheck"
    result = subprocess.run([ACCGEN, "init", "castcheck", "--dir", str(project)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return project / "specs" / "autocast.yaml"


def check_equals_cuda(path, cuda):
    lists, hand_registered = cuda
    dtype, spec, banned = spec_lists(path)
    assert dtype == "float16"
    for policy, ops in lists.items():
        extra = [op for op in spec[policy] if op not in ops]
        if policy == "lower_precision_fp":
            # The cuDNN convolutions autocast_mode.cpp adds for CUDA.
            assert set(extra) <= hand_registered, (policy, extra)
            assert spec[policy][:len(ops)] == ops, policy
        else:
            assert spec[policy] == ops, policy
    # Everything CUDA registers is listed once, and nothing else.
    listed = [op for ops in spec.values() for op in ops] + list(banned)
    assert len(listed) == len(set(listed))
    assert set(listed) == set().union(*map(set, lists.values()),
                                      hand_registered)
    assert list(banned) == ["binary_cross_entropy"]
    message = banned["binary_cross_entropy"]
    assert "binary_cross_entropy_with_logits" in message
    assert "BCEWithLogitsLoss" in message


def test_header_lists_parse(cuda):
    lists, hand_registered = cuda
    assert "mm" in lists["lower_precision_fp"]
    assert "softmax.int" in lists["fp32_set_opt_dtype"]
    assert lists["fp32_append_dtype"] == ["norm.Scalar", "norm.ScalarOpt_dim"]
    assert "binary_cross_entropy" in hand_registered
    for op in ("mm", "conv_transpose2d.input", "norm.Scalar", "scatter_add"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(
            "aten::" + op, "AutocastCUDA"), op


def test_init_writes_cuda_lists(init_spec, cuda):
    check_equals_cuda(init_spec, cuda)


def test_example_uses_cuda_lists(cuda):
    check_equals_cuda(_REPO / "specs" / "autocast.yaml", cuda)


def test_init_and_example_agree(init_spec):
    assert spec_lists(init_spec) == spec_lists(_REPO / "specs" /
                                               "autocast.yaml")
