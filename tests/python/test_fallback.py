"""The global fallback of the backend under test (`fallback: emulate`, the
default, or `cpu`): operators the spec does not list compute what the CPU
computes, in place and out= forms write the device tensors, random ones draw
from the device generators, and fallback_counts() says which fallback ran
them. Under `emulate` nothing is copied: views stay views of the device
memory. The per-operator `kind: fallback` entries run on the CPU with copies,
and the opt-in warning names each such operator once. The `fallback: error`
policy is driven by test_fallback_error.py.
"""
import os
import pathlib
import textwrap

import pytest
import torch
import yaml

_SPECS = pathlib.Path(os.environ.get(
    "ACCGEN_TEST_SPECS", pathlib.Path(__file__).resolve().parents[2] / "specs"))


def _policy() -> str:
    with open(_SPECS / "backend.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f).get("fallback", "emulate")


@pytest.fixture(scope="module")
def policy(device):
    """The backend's global fallback: emulate or cpu (error has its own
    test module)."""
    value = _policy()
    if value not in ("emulate", "cpu"):
        pytest.skip(f"the backend's global fallback is {value}")
    return value


@pytest.fixture(scope="module")
def emulate_policy(policy):
    if policy != "emulate":
        pytest.skip("the backend's global fallback is not emulate")


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
def test_unlisted_operators_match_the_cpu(device, policy, name, fn):
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(
        f"aten::{name}", "PrivateUse1")
    x = torch.randn(4, 4)
    want = fn(x)
    got = fn(x.to(device))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.device.type == device
        torch.testing.assert_close(g.cpu(), w)


def test_fallback_writes_back_in_place_and_out(device, policy):
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


def test_random_fallback_uses_the_device_generator(device, mod, policy):
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


# --8<-- [start:fallback-per-operator]
def test_per_operator_fallback_entry(device, mod, policy):
    x = torch.randn(2, 6)
    torch.testing.assert_close(torch.logcumsumexp(x.to(device), 1).cpu(),
                               torch.logcumsumexp(x, 1))
    # logcumsumexp is listed with kind `fallback`: it runs on the CPU.
    assert mod.fallback_counts()["cpu"]["aten::logcumsumexp"] >= 1


def test_unlisted_operators_are_counted_by_fallback(device, mod, policy):
    name = "aten::exponential_"
    before = mod.fallback_counts().get(policy, {}).get(name, 0)
    torch.empty(5, device=device).exponential_()
    torch.empty(5, device=device).exponential_()
    counts = mod.fallback_counts()
    assert counts[policy][name] == before + 2, counts
    other = "cpu" if policy == "emulate" else "emulate"
    assert name not in counts.get(other, {}), counts
# --8<-- [end:fallback-per-operator]


def test_emulate_fallback_returns_views_of_the_device_memory(
        device, emulate_policy):
    # view_as_real and unfold have CPU kernels only: the fallback runs them,
    # and what they return shares the device tensor's memory.
    z = torch.randn(4, dtype=torch.complex64)
    dz = z.to(device)
    real = torch.view_as_real(dz)
    assert real.device.type == device
    assert real.untyped_storage().data_ptr() == dz.untyped_storage().data_ptr()
    real[:, 0] = 7.0
    assert torch.equal(dz.real.cpu(), torch.full((4,), 7.0))
    x = torch.arange(10.0)
    dx = x.to(device)
    windows = dx.unfold(0, 4, 2)
    torch.testing.assert_close(windows.cpu(), x.unfold(0, 4, 2))
    windows.zero_()
    want = x.clone()
    want.unfold(0, 4, 2).zero_()
    torch.testing.assert_close(dx.cpu(), want)


def test_emulate_fallback_data_dependent_shapes(device, emulate_policy):
    x = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    d = x.to(device)
    torch.testing.assert_close(torch.nonzero(d).cpu(), torch.nonzero(x))
    torch.testing.assert_close(
        torch.unique(d, dim=0).cpu(), torch.unique(x, dim=0))
    torch.testing.assert_close(d[d > 0].cpu(), x[x > 0])


def test_emulate_fallback_dropout_draws_from_the_device(
        device, mod, emulate_policy):
    # native_dropout has no generator argument: its CPU kernel draws from
    # CPU's default generator, which the fallback hands the device's state.
    x = torch.ones(1000, device=device)
    mod.manual_seed(11)
    a = torch.nn.functional.dropout(x, 0.5, training=True)
    torch.manual_seed(0)
    mod.manual_seed(11)
    torch.rand(10)  # the CPU generator plays no part
    b = torch.nn.functional.dropout(x, 0.5, training=True)
    assert torch.equal(a.cpu(), b.cpu())
    kept = (a.cpu() != 0).float().mean().item()
    assert 0.4 < kept < 0.6, kept
    c = torch.nn.functional.dropout(x, 0.5, training=True)
    assert not torch.equal(a.cpu(), c.cpu())
    # and the CPU generator's own sequence is untouched by the device's
    torch.manual_seed(5)
    want = torch.rand(3)
    torch.manual_seed(5)
    torch.nn.functional.dropout(x, 0.5, training=True)
    assert torch.equal(torch.rand(3), want)


def test_fallback_warning_once_per_operator(device, policy, run_python):
    # The warning is about copies: operators that run on the CPU
    # (logcumsumexp is listed with kind `fallback`; under `fallback: cpu` erf
    # is too) warn
    # once each, emulated ones (add; erf under `fallback: emulate`) never.
    env_var = device.upper() + "_WARN_FALLBACK"
    code = textwrap.dedent(f"""
        import warnings, torch
        import {'torch_' + device}
        x = torch.randn(3, device="{device}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.logcumsumexp(x, 0); torch.logcumsumexp(x, 0); torch.erf(x)
            x + x
        messages = [str(w.message) for w in caught]
        print(len([m for m in messages if "aten::logcumsumexp" in m]),
              len([m for m in messages if "aten::erf" in m]),
              len([m for m in messages if "aten::add" in m]))
    """)
    quiet = run_python(code)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.split() == ["0", "0", "0"], quiet.stdout
    loud = run_python(code, env={env_var: "1"})
    assert loud.returncode == 0, loud.stderr
    erf = "1" if policy == "cpu" else "0"
    assert loud.stdout.split() == ["1", erf, "0"], loud.stdout
