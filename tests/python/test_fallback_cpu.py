"""The CPU fallback of the example backend (`fallback: cpu`): operators the
spec does not list run on the CPU with copies in and out, random ones draw
from the device generators, and the opt-in warning names each operator once.
The `fallback: error` policy is driven by test_fallback_error.py.
"""
import os
import pathlib
import textwrap

import pytest
import torch
import yaml

_SPECS = pathlib.Path(os.environ.get(
    "ACCGEN_TEST_SPECS", pathlib.Path(__file__).resolve().parents[2] / "specs"))


@pytest.fixture(scope="module")
def cpu_policy(device):
    with open(_SPECS / "backend.yaml", encoding="utf-8") as f:
        if yaml.safe_load(f).get("fallback", "cpu") != "cpu":
            pytest.skip("the backend's global fallback is not cpu")


# Operators the example spec does not list, with inputs.
UNLISTED = [
    ("lgamma", lambda x: torch.lgamma(x.abs() + 0.5)),
    ("erf", torch.erf),
    ("cummax", lambda x: tuple(torch.cummax(x, 1))),
    ("flip", lambda x: torch.flip(x, [0])),
    ("kthvalue", lambda x: tuple(torch.kthvalue(x, 2, 1))),
    ("median", lambda x: x.median()),
    ("tril", torch.tril),
    ("atan2", lambda x: torch.atan2(x, x.t().contiguous().t() + 1)),
]


@pytest.mark.parametrize("name,fn", UNLISTED, ids=[u[0] for u in UNLISTED])
def test_unlisted_operators_run_on_the_cpu(device, cpu_policy, name, fn):
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(
        f"aten::{name}", "PrivateUse1")
    x = torch.randn(4, 4)
    want = fn(x)
    got = fn(x.to(device))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.device.type == device
        torch.testing.assert_close(g.cpu(), w)


def test_fallback_writes_back_in_place_and_out(device, cpu_policy):
    x = torch.randn(3, 5)
    d = x.to(device)
    view = d[:, 1:4]
    view.lgamma_()
    want = x.clone()
    want[:, 1:4].lgamma_()
    torch.testing.assert_close(d.cpu(), want)
    out = torch.empty(0, device=device)
    torch.erf(x.to(device), out=out)
    torch.testing.assert_close(out.cpu(), torch.erf(x))


def test_random_fallback_uses_the_device_generator(device, mod, cpu_policy):
    # exponential_ and multinomial are not in the spec.
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(
        "aten::exponential_", "PrivateUse1")
    mod.manual_seed(3)
    a = torch.empty(200, device=device).exponential_()
    m1 = torch.multinomial(torch.ones(4, 10, device=device), 5)
    mod.manual_seed(3)
    torch.empty(100).exponential_()  # the CPU generator plays no part
    b = torch.empty(200, device=device).exponential_()
    m2 = torch.multinomial(torch.ones(4, 10, device=device), 5)
    assert torch.equal(a.cpu(), b.cpu())
    assert torch.equal(m1.cpu(), m2.cpu())
    assert a.min() > 0 and abs(a.mean().item() - 1) < 0.3


def test_per_operator_fallback_entry(device, cpu_policy):
    x = torch.randn(2, 6)
    torch.testing.assert_close(torch.cumsum(x.to(device), 1).cpu(),
                               torch.cumsum(x, 1))


def test_fallback_warning_once_per_operator(device, cpu_policy, run_python):
    env_var = device.upper() + "_WARN_FALLBACK"
    code = textwrap.dedent(f"""
        import warnings, torch
        import {'torch_' + device}
        x = torch.randn(3, device="{device}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.erf(x); torch.erf(x); torch.lgamma(x.abs() + 1)
            x + x
        messages = [str(w.message) for w in caught]
        print(len([m for m in messages if "aten::erf" in m]),
              len([m for m in messages if "aten::lgamma" in m]),
              len([m for m in messages if "aten::add" in m]))
    """)
    quiet = run_python(code)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.split() == ["0", "0", "0"], quiet.stdout
    loud = run_python(code, env={env_var: "1"})
    assert loud.returncode == 0, loud.stderr
    assert loud.stdout.split() == ["1", "1", "0"], loud.stdout
