"""torch.distributed on the device: the backend's c10d process group over
the collective interface (Gloo underneath on the emulator), driven by two
rank processes on loopback. Each scenario lives in distributed_ranks.py and
checks its results against the same computation on CPU; every run is
bounded in time."""

import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
import torch

from processes import run_together

RANKS = pathlib.Path(__file__).with_name("distributed_ranks.py")
WORLD = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(device: str, package: str, scenario: str,
              timeout: float = 120, env: dict | None = None) -> list[str]:
    # The ranks meet in a file store of their own: a port found free here
    # could be taken by another test's process before rank 0 binds it.
    store = pathlib.Path(tempfile.mkdtemp(prefix="accgen-ranks-")) / "store"
    environ = dict(os.environ, ACCGEN_TEST_PACKAGE=package, **(env or {}))
    commands = [[sys.executable, str(RANKS), scenario, str(rank), str(WORLD),
                 str(store), device] for rank in range(WORLD)]
    try:
        results = run_together(commands, environ, timeout)
    finally:
        shutil.rmtree(store.parent, ignore_errors=True)
    for rank, (code, out) in enumerate(results):
        assert code == 0, f"rank {rank} of {scenario} failed:\n{out}"
    return [out for _, out in results]


@pytest.fixture(scope="module")
def dist_device(device):
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("this torch has no torch.distributed")
    return device


@pytest.fixture(scope="module")
def ranks(dist_device, mod):
    # ranks(scenario, timeout=...): runs a scenario of distributed_ranks.py
    # in WORLD rank processes; returns their outputs.
    return lambda scenario, **kw: run_ranks(dist_device, mod.__name__,
                                            scenario, **kw)


def test_registered_as_the_device_default(dist_device):
    import torch.distributed as dist

    name = f"{dist_device}ccl"
    assert dist.Backend.default_device_backend_map[dist_device] == name
    assert dist.Backend.backend_capability[name] == [dist_device]
    assert dist.Backend.backend_type_map[name] == dist.ProcessGroup.BackendType.CUSTOM


def test_collectives(ranks):
    out = ranks("collectives", timeout=240)
    assert all("collectives passed" in o for o in out)


def test_explicit_backend_string(ranks):
    ranks("init_forms")


def test_gloo_takes_device_tensors(ranks):
    ranks("gloo")


def test_gloo_workaround_is_still_needed(ranks):
    out = ranks("gloo_without_workaround")
    assert all("gloo fails on the device without the workaround" in o for o in out), out


def test_stream_order(ranks):
    ranks("stream_order")


def test_functional_collectives_and_dtensor(ranks):
    ranks("functional")


def test_dtensor_random_operators(ranks):
    ranks("dtensor_random")


def test_ddp_training_matches_cpu(ranks):
    ranks("ddp")


def test_fsdp2_training_matches_cpu(ranks):
    ranks("fsdp2")


def test_mismatched_sizes_raise(ranks):
    out = ranks("mismatch", timeout=60)
    assert any("raised after" in o for o in out), out


def test_blocking_wait_raises_in_wait(ranks, mod):
    prefix = mod._C._config["env_prefix"]
    out = ranks("blocking_wait", timeout=60,
                env={f"{prefix}_DIST_BLOCKING_WAIT": "1"})
    assert all("raised after wait" in o for o in out), out


def test_dead_peer_raises_on_the_survivor(ranks):
    out = ranks("dead_peer", timeout=60)
    assert "raised after" in out[0], out[0]


def test_torchrun(dist_device, mod):
    env = dict(os.environ, ACCGEN_TEST_DEVICE=dist_device,
               ACCGEN_TEST_PACKAGE=mod.__name__)
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
         str(WORLD), "--master-addr", "127.0.0.1", "--master-port",
         str(_free_port()), str(RANKS)],
        capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("ddp passed") == WORLD, proc.stdout


def test_default_group_workaround_is_still_needed(ranks):
    if torch.torch_version.TorchVersion(torch.__version__) >= (2, 14):
        pytest.skip("the workaround applies to torch before 2.14")
    out = ranks("ddp_without_workaround")
    assert all("DDP fails without the workaround" in o for o in out), out
