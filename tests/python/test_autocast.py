"""torch.autocast on the device: the rules of specs/autocast.yaml."""
import os
import pathlib

import pytest
import torch
import yaml

_SPECS = pathlib.Path(os.environ.get(
    "ACCGEN_TEST_SPECS", pathlib.Path(__file__).resolve().parents[2] / "specs"))


def policies():
    path = _SPECS / "autocast.yaml"
    if not path.exists():
        return {}, None
    with open(path, encoding="utf-8") as f:
        spec = yaml.safe_load(f) or {}
    dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}[
        spec.get("dtype", "float16")]
    return spec.get("policies") or {}, dtype


POLICIES, LOW = policies()


@pytest.fixture
def low(device, autocast):
    if "mm" not in (POLICIES.get("lower_precision_fp") or []):
        pytest.skip("mm is not lower_precision_fp in this spec")
    return LOW


# --8<-- [start:autocast-mm]
def test_mm_runs_in_the_lower_dtype(device, low):
    a = torch.randn(4, 8, device=device)
    b = torch.randn(8, 3, device=device)
    with torch.autocast(device):
        out = torch.mm(a, b)
        via_matmul = a @ b
        lin = torch.nn.functional.linear(a, b.t())
    assert out.dtype == low
    assert via_matmul.dtype == low
    assert lin.dtype == low
    want = (a.cpu().to(low).float() @ b.cpu().to(low).float())
    torch.testing.assert_close(out.float().cpu(), want, rtol=1e-2, atol=1e-2)
    # Outside the region nothing is cast.
    assert torch.mm(a, b).dtype == torch.float32
# --8<-- [end:autocast-mm]


def test_explicit_dtype_and_disabled_region(device, low):
    a = torch.randn(4, 4, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):
        assert torch.mm(a, a).dtype == torch.bfloat16
    with torch.autocast(device, enabled=False):
        assert torch.mm(a, a).dtype == torch.float32


def listed(policy, op):
    if op not in (POLICIES.get(policy) or []):
        pytest.skip(f"{op} is not {policy} in this spec")


def test_fp32_ops_run_in_float32(device, low):
    listed("fp32", "exp")
    x = torch.randn(3, 5, device=device, dtype=low)
    with torch.autocast(device):
        got = torch.exp(x)
        # An operator without a rule keeps its input dtype.
        assert (x + x).dtype == low
    assert got.dtype == torch.float32 and got.device.type == device
    torch.testing.assert_close(got.cpu(), torch.exp(x.cpu().float()))
    assert torch.exp(x).dtype == low


def test_fp32_set_opt_dtype_sets_the_dtype_argument(device, low):
    listed("fp32_set_opt_dtype", "softmax.int")
    x = torch.randn(3, 5, device=device, dtype=low)
    with torch.autocast(device):
        assert torch.softmax(x, 1).dtype == torch.float32
        # A dtype given by the caller stays.
        assert torch.softmax(x, 1, dtype=torch.float64).dtype == torch.float64


def test_fp32_append_dtype_calls_the_dtype_overload(device, low):
    # norm.Scalar has no dtype argument: the rule calls
    # norm.ScalarOpt_dtype with float32, as torch's CUDA rules do.
    if "norm.Scalar" not in (POLICIES.get("fp32_append_dtype") or []):
        pytest.skip("norm.Scalar is not fp32_append_dtype in this spec")
    # (torch.norm itself routes to linalg.vector_norm: call the overloads.)
    norm = torch.ops.aten.norm
    x = torch.randn(3, 5, device=device, dtype=low)
    with torch.autocast(device):
        got = norm.Scalar(x, 3)
        by_dim = norm.ScalarOpt_dim(x, 2, [1])
    assert got.dtype == torch.float32 and got.device.type == device
    torch.testing.assert_close(got.cpu(), norm.Scalar(x.cpu().float(), 3))
    if "norm.ScalarOpt_dim" in POLICIES["fp32_append_dtype"]:
        assert by_dim.dtype == torch.float32
        torch.testing.assert_close(by_dim.cpu(),
                                   norm.ScalarOpt_dim(x.cpu().float(), 2, [1]))
    # Outside autocast the input's dtype stays.
    assert norm.Scalar(x, 3).dtype == low


def test_promote_ops_widen(device, low):
    listed("promote", "addcmul")
    a = torch.randn(2, 3, device=device, dtype=low)
    b = torch.randn(2, 3, device=device)
    with torch.autocast(device):
        got = torch.addcmul(a, a, b)
        assert torch.addcmul(a, a, a).dtype == low
    assert got.dtype == torch.float32 and got.device.type == device
    want = torch.addcmul(a.cpu().float(), a.cpu().float(), b.cpu())
    torch.testing.assert_close(got.cpu(), want)


# --8<-- [start:autocast-banned]
def test_banned_op_raises_its_message(device, low):
    banned = {e["op"]: e["message"] for e in POLICIES.get("banned") or []}
    if "binary_cross_entropy" not in banned:
        pytest.skip("binary_cross_entropy is not banned in this spec")
    p = torch.rand(4, device=device)
    t = torch.rand(4, device=device)
    with torch.autocast(device):
        with pytest.raises(RuntimeError) as raised:
            torch.nn.functional.binary_cross_entropy(p, t)
        # The safe alternative the message names runs, in float32.
        logits = torch.nn.functional.binary_cross_entropy_with_logits(p, t)
    assert banned["binary_cross_entropy"] in str(raised.value)
    assert "BCEWithLogitsLoss" in str(raised.value)
    assert logits.dtype == torch.float32
    # Outside autocast the operator runs.
    torch.testing.assert_close(
        torch.nn.functional.binary_cross_entropy(p, t).cpu(),
        torch.nn.functional.binary_cross_entropy(p.cpu(), t.cpu()))
# --8<-- [end:autocast-banned]


def test_autocast_backward(device, low):
    a = torch.randn(4, 8, device=device, requires_grad=True)
    b = torch.randn(8, 3, device=device, requires_grad=True)
    with torch.autocast(device):
        loss = torch.mm(a, b).float().sum()
    loss.backward()
    assert a.grad.dtype == torch.float32 and b.grad.dtype == torch.float32
    torch.testing.assert_close(a.grad.cpu(), b.detach().cpu().sum(1).expand(4, 8),
                               rtol=1e-2, atol=1e-2)
