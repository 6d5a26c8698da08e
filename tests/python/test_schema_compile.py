"""The all-operator signature proof, run time half (docs/schemas.md).

tests/schema_compile builds `schema_compile_lib`: one wrapper per operator of
the installed torch that can have a backend kernel, with the C++ signature
accgen's schema layer maps it to, registered on PrivateUse1. Here the library
is loaded into torch and the dispatcher is asked whether it took every
registration.

A C++ signature mismatch makes the dispatcher throw while the library's
static initialisers run, which aborts the process; the library is therefore
loaded in a child process so that a mismatch fails the test with the
dispatcher's message instead of killing pytest.

Environment (set by the ctest entry `schema_compile_proof`):
  ACCGEN_SCHEMA_COMPILE_LIB           the built schema_compile_lib
  ACCGEN_SCHEMA_COMPILE_OPS           the operator list the generator wrote
                                      (default: schema_compile_ops.txt next
                                      to the library's build directory)
  ACCGEN_SCHEMA_COMPILE_NEGATIVE_LIB  the negative control library
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

LIB = os.environ.get("ACCGEN_SCHEMA_COMPILE_LIB")
NEGATIVE_LIB = os.environ.get("ACCGEN_SCHEMA_COMPILE_NEGATIVE_LIB")

SKIP_REASON = (
    "ACCGEN_SCHEMA_COMPILE_LIB is not set: build schema_compile_lib and run "
    "this through ctest (-R schema_compile_proof), or set it to the built "
    "library")

# Runs in the child: registrations on PrivateUse1 before and after loading
# the library, and for each listed operator whether it now has a kernel.
PROBE = r"""
import json, sys, torch
lib, ops_file = sys.argv[1], sys.argv[2]
ops = [l.strip() for l in open(ops_file) if l.strip()]
key = "PrivateUse1"
before = set(torch._C._dispatch_get_registrations_for_dispatch_key(key))
had_kernel = [o for o in ops
              if torch._C._dispatch_has_kernel_for_dispatch_key(o, key)]
torch.ops.load_library(lib)
after = set(torch._C._dispatch_get_registrations_for_dispatch_key(key))
without_kernel = [o for o in ops
                  if not torch._C._dispatch_has_kernel_for_dispatch_key(o, key)]
print(json.dumps({
    "listed": len(ops),
    "had_kernel_before": had_kernel,
    "without_kernel_after": without_kernel,
    "added": sorted(after - before),
}))
"""


def _ops_file():
    explicit = os.environ.get("ACCGEN_SCHEMA_COMPILE_OPS")
    if explicit:
        return pathlib.Path(explicit)
    return pathlib.Path(LIB).parent / "schema_compile_ops.txt"


def _load(lib, ops_file):
    # Backends installed in this environment (a generated one, say) would
    # register their own PrivateUse1 kernels at `import torch`; the probe
    # must see only the proof library's.
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(lib), str(ops_file)],
        capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def probe():
    if not LIB:
        print(f"SKIPPED: {SKIP_REASON}", file=sys.stderr)
        pytest.skip(SKIP_REASON)
    ops_file = _ops_file()
    assert pathlib.Path(LIB).is_file(), f"no library at {LIB}"
    assert ops_file.is_file(), f"no operator list at {ops_file}"
    ops = [l.strip() for l in ops_file.read_text().splitlines() if l.strip()]
    proc = _load(LIB, ops_file)
    assert proc.returncode == 0, (
        "loading the proof library failed; the dispatcher rejected a "
        "registration:\n" + proc.stderr[-4000:])
    return ops, json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_operator_is_registered(probe):
    ops, result = probe
    # The generator lists what it emitted; the list is the full set, not a
    # sample (docs/schemas.md gives the expected size for the pinned torch).
    assert len(ops) > 1000
    assert result["listed"] == len(ops)
    assert result["without_kernel_after"] == [], (
        f"{len(result['without_kernel_after'])} operators have no "
        f"PrivateUse1 kernel after loading, e.g. "
        f"{result['without_kernel_after'][:10]}")


def test_kernels_come_from_the_library(probe):
    ops, result = probe
    # Nothing on the list had a PrivateUse1 kernel before the load, so the
    # kernels found afterwards are the library's.
    assert result["had_kernel_before"] == []


def test_registered_count_equals_emitted_count(probe):
    ops, result = probe
    # Exactly the emitted operators gained a PrivateUse1 registration: none
    # missing, none extra.
    assert result["added"] == sorted(ops)
    assert len(result["added"]) == len(ops)


def test_negative_control_is_rejected():
    if not LIB:
        print(f"SKIPPED: {SKIP_REASON}", file=sys.stderr)
        pytest.skip(SKIP_REASON)
    assert NEGATIVE_LIB, "ACCGEN_SCHEMA_COMPILE_NEGATIVE_LIB is not set"
    # One deliberately wrong signature (self by value): if this loaded, a
    # wrong mapping in the proof library would load too.
    proc = _load(NEGATIVE_LIB, _ops_file())
    assert proc.returncode != 0
    assert "Mismatch in kernel C++ signatures" in proc.stderr
