"""`accgen init` with a second device name, built and used in this test run.

The backend (the session's second_backend, built once per run: conftest.py
and init_backend.py) is installed into a directory of its own and driven in
subprocesses. Its spec is what init wrote: the global fallback `emulate`
runs everything it does not list. The suites the example runs run against it
in test_init_backend_suites.py.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from init_backend import ACCGEN, PREFIX, drive, run, run_suites_on

pytestmark = pytest.mark.skipif(
    not ACCGEN or not PREFIX,
    reason="set ACCGEN_BIN and ACCGEN_PREFIX (scripts/test.sh does) to build "
    "an init-generated backend")


def test_second_backend_computes(second_backend):
    r = drive(second_backend, """
        x = torch.ones(3, device="second") + 1
        assert x.device.type == "second", x.device
        assert x.cpu().tolist() == [2.0, 2.0, 2.0]
        a = torch.randn(4, 5)
        b = torch.randn(5, 2)
        got = (a.to("second") @ b.to("second")).cpu()
        torch.testing.assert_close(got, a @ b)
        assert torch.second.device_count() == 2
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


def test_unlisted_operators_are_emulated(second_backend):
    # lerp is not in the init spec: the emulate fallback runs it on the
    # device memory, and nothing reaches the CPU fallback.
    r = drive(second_backend, """
        a, b = torch.randn(5), torch.randn(5)
        got = torch.lerp(a.to("second"), b.to("second"), 0.3)
        torch.testing.assert_close(got.cpu(), torch.lerp(a, b, 0.3))
        counts = torch.second.fallback_counts()
        assert "cpu" not in counts, counts
        assert counts["emulate"]["aten::lerp.Scalar_out"] == 1, counts
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


def test_compile_on_the_init_backend(second_backend):
    # torch.compile on the freshly initialised backend: the compile suite
    # less the example's custom operator, which an init project lacks, and
    # less the checks that Inductor's workarounds are still needed: they
    # are the runtime's, the same for every backend, and test_compile.py
    # shows them on the example.
    run_suites_on(second_backend, ("test_compile.py",),
                   "-k", "not custom_operator and not workarounds_are_still_needed")


def test_noop_regeneration_rebuilds_nothing(second_backend):
    # A no-op `accgen generate` leaves every file's bytes and mtime as they
    # were, so the backend's own build tree has nothing to do afterwards.
    project = second_backend.parent / "second"
    regen = run([ACCGEN, "generate"], cwd=project)
    assert regen.stdout.startswith("0 written, "), regen.stdout
    (build_dir,) = (project / "build").iterdir()
    rebuild = run(["cmake", "--build", str(build_dir)])
    assert "no work to do" in rebuild.stdout, rebuild.stdout


def test_readme_command_runs_in_the_project_directory(second_backend):
    # The README's own command, run where a user runs it: in the project,
    # whose src/ layout keeps the unbuilt package off sys.path.
    project = second_backend.parent / "second"
    readme = (project / "README.md").read_text()
    command = next(line.strip() for line in readme.splitlines()
                   if line.strip().startswith("python -c"))
    code = command[len("python -c "):].strip("\"")
    env = dict(os.environ, PYTHONPATH=str(second_backend),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    r = subprocess.run([sys.executable, "-c", "import torch_second\n" + code],
                       capture_output=True, text=True, env=env, cwd=str(project))
    assert r.returncode == 0, r.stderr
    assert "device='second:0'" in r.stdout, r.stdout
    assert not (project / "torch_second").exists()


def test_two_backends_in_one_process(second_backend):
    # The example backend is installed in this environment, the second one
    # is on PYTHONPATH: `import torch` autoloads both. PyTorch takes one
    # PrivateUse1 backend per process; the one that loads second must leave
    # the first working and say once which packages clash.
    env = dict(os.environ, PYTHONPATH=str(second_backend))
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import torch
        owner = torch._C._get_privateuse1_backend_name()
        x = torch.ones(3, device=owner) + 1
        assert x.cpu().tolist() == [2.0, 2.0, 2.0]
        print("owner", owner)
    """)], capture_output=True, text=True, env=env, cwd=str(second_backend))
    assert r.returncode == 0, r.stderr
    owner = r.stdout.split()[-1]
    assert owner in ("second", "accel"), r.stdout
    loser = "torch_accel" if owner == "second" else "torch_second"
    warnings = [line for line in r.stderr.splitlines() if "is not active" in line]
    assert len(warnings) == 1, r.stderr
    assert warnings[0].count(loser) >= 1 and f"'{owner}'" in warnings[0], r.stderr
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in warnings[0], r.stderr


def test_a_vendor_collective_library_replaces_gloo(second_backend, tmp_path):
    # The swap point of docs/distributed.md: the init project built with a
    # vendor's collective library (tests/vendor_collectives: one rank, over
    # the driver interface alone) in place of the runtime's collectives over
    # Gloo. torch.distributed runs through it unchanged, and no Gloo group is
    # ever made.
    project = second_backend.parent / "second"
    vendor = os.path.join(os.path.dirname(__file__), os.pardir,
                          "vendor_collectives", "vendor.cmake")
    target = tmp_path / "site"
    env = dict(os.environ, CCACHE_BASEDIR=str(project.parent),
               PATH=os.pathsep.join([os.path.join(PREFIX, "bin"),
                                     os.environ.get("PATH", "")]))
    env.pop("CMAKE_PREFIX_PATH", None)
    run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "-q",
         "--no-deps", "--target", str(target), str(project),
         "--config-settings=build-dir=build/vendor-collectives",
         "--config-settings=cmake.define.ACCGEN_COLLECTIVES_TARGET="
         "vendor_self_collectives",
         "--config-settings=cmake.define.CMAKE_PROJECT_INCLUDE="
         + os.path.abspath(vendor)], env=env)
    r = drive(target, """
        import socket
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        def no_gloo(*args, **kwargs):
            raise AssertionError("a Gloo group was made")

        dist.ProcessGroupGloo = no_gloo
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dist.init_process_group(init_method=f"tcp://127.0.0.1:{port}",
                                rank=0, world_size=1)
        t = torch.arange(4.0, device="second")
        dist.all_reduce(t)
        out = torch.empty(4, device="second")
        dist.all_gather_single(out, t * 2)
        torch.testing.assert_close(out.cpu(), torch.arange(4.0) * 2)
        torch.manual_seed(0)
        cpu = torch.nn.Linear(3, 2)
        model = DistributedDataParallel(torch.nn.Linear(3, 2).to("second"))
        model.module.load_state_dict(cpu.state_dict())
        x = torch.randn(5, 3)
        model(x.to("second")).sum().backward()
        cpu(x).sum().backward()
        torch.testing.assert_close(model.module.weight.grad.cpu(),
                                   cpu.weight.grad)
        dist.destroy_process_group()
        print("ok")
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok")
