"""The `fallback: error` policy, on a second backend generated for this test.

A small spec (the builtins, a few emulated operators, a per-operator CPU
fallback) with `fallback: error` is generated with accgen's wheel, built
with build isolation as a vendor builds it from the wheel alone, installed
into a directory of its own, and driven in subprocesses with autoload off
(one PrivateUse1 backend per process; the example backend is the
installed one). It checks that an unlisted operator raises an error
naming the operator, the device and what to do, that the listed ones and
the per-operator fallback work, and that creating, printing and copying
tensors still works (Note [Operators the error policy keeps]).
"""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from init_backend import TEST_ONLY_BUILD
from wheel_build import clean_env, run

_REPO = pathlib.Path(__file__).resolve().parents[2]

DEVICE = "strict"

BACKEND = f"""device: {DEVICE}
devices: 1
memory: 256MiB
fallback: error
features:
  pinned_memory: false
  autocast: false
"""

OPERATORS = """operators:
  - {op: empty.memory_format, kind: builtin}
  - {op: empty_strided, kind: builtin}
  - {op: as_strided, kind: builtin}
  - {op: resize_, kind: builtin}
  - {op: _reshape_alias, kind: builtin}
  - {op: _copy_from, kind: builtin}
  - {op: _copy_from_and_resize, kind: builtin}
  - {op: _local_scalar_dense, kind: builtin}
  - {op: set_.source_Storage, kind: builtin}
  - {op: set_.source_Storage_storage_offset, kind: builtin}
  - {op: set_.source_Tensor, kind: builtin}
  - {op: set_, kind: builtin}
  - {op: view, kind: builtin}
  - {op: fill_.Scalar, kind: emulate}
  - {op: add.Tensor, kind: emulate}
  - {op: mm, kind: emulate}
  - {op: cumsum, kind: fallback}
"""


@pytest.fixture(scope="module")
def strict_backend(tmp_path_factory, accgen_wheel):
    # Generated and built as a vendor does from accgen's wheel alone:
    # `accgen generate` from the venv holding the wheel, then `pip install`
    # with build isolation, pip bringing scikit-build-core, accgen (from
    # the wheel's directory) and the torch release the lock records into
    # the build; no other accgen in reach.
    venv, wheels = accgen_wheel
    work = tmp_path_factory.mktemp("strict")
    specs = work / "specs"
    specs.mkdir()
    (specs / "backend.yaml").write_text(BACKEND)
    (specs / "operators.yaml").write_text(OPERATORS)
    project = work / "project"
    env = clean_env(venv, **TEST_ONLY_BUILD)
    run(["accgen", "generate", "--specs", str(specs), "--out", str(project)],
        env=env)
    site = work / "site"
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps",
         "--find-links", str(wheels), "--target", str(site), str(project)],
        env=env, timeout=3600)
    return site


def drive(site, code):
    env = dict(os.environ, PYTHONPATH=str(site),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    prelude = f"import torch, torch_{DEVICE}\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True, text=True, env=env, cwd=str(site), timeout=600)


def test_unlisted_operator_raises_naming_it(strict_backend):
    r = drive(strict_backend, f"""
        x = torch.randn(3).to("{DEVICE}")
        try:
            torch.lgamma(x)
        except NotImplementedError as e:
            print("raised:", e)
    """)
    assert r.returncode == 0, r.stderr
    message = r.stdout.strip()
    assert message.startswith("raised: operator aten::lgamma"), message
    assert f"is not implemented for device '{DEVICE}'" in message
    assert "add it to specs/operators.yaml (kind emulate, kernel or fallback)" \
        in message


def test_listed_and_fallback_operators_work(strict_backend):
    r = drive(strict_backend, f"""
        a = torch.randn(4, 5)
        b = torch.randn(5, 3)
        d = "{DEVICE}"
        torch.testing.assert_close((a.to(d) + 1).cpu(), a + 1)
        torch.testing.assert_close((a.to(d) @ b.to(d)).cpu(), a @ b)
        torch.testing.assert_close(torch.cumsum(a.to(d), 1).cpu(), a.cumsum(1))
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_creating_printing_and_copying_still_work(strict_backend):
    r = drive(strict_backend, f"""
        import warnings
        warnings.simplefilter("error")
        d = "{DEVICE}"
        assert torch.ones(2, 3, device=d).cpu().tolist() == [[1.0] * 3] * 2
        assert torch.zeros(4, device=d).cpu().tolist() == [0.0] * 4
        x = torch.tensor([1.5, -2.0, float("inf"), float("nan")])
        for t in (x, torch.arange(6), torch.randn(3000), torch.tensor([True]),
                  torch.randn(2, 2).half(), torch.empty(0)):
            text = str(t.to(d))
            assert f"device='{{d}}:0'" in text, text
        assert "1.5000" in str(x.to(d))
        y = torch.randn(3, 4)
        torch.testing.assert_close(y.to(d).to(torch.float64).cpu(),
                                   y.double())
        torch.testing.assert_close(y.to(d).clone().cpu(), y)
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
