"""The example ported to a device whose memory the host cannot address
(examples/remote): generated from its specs, with its kernels and device
code, built against accgen's remote driver, installed into a directory of
its own and driven in subprocesses, as docs/guide/driver.md says.

PyTorch takes one PrivateUse1 backend per process and the example backend
is installed in this environment with autoload on: the subprocesses turn
autoload off and import torch_raccel explicitly.
"""
import os
import shutil
import subprocess
import sys
import textwrap

from init_backend import ACCGEN, PREFIX, run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "remote")


def build_remote_backend(work):
    """The guide's steps in `work`: the specs, kernels and device code
    first (so that `accgen generate` keeps them; the lock in the specs
    records the torch it runs under), then generate, then build against the
    remote driver into work/site."""
    project = work / "raccel"
    for part in ("specs", "kernels", "device"):
        shutil.copytree(os.path.join(EXAMPLE, part), project / part)
    run([ACCGEN, "generate", "--specs", str(project / "specs"),
         "--out", str(project)])
    env = dict(os.environ, CCACHE_BASEDIR=str(work),
               PATH=os.pathsep.join([os.path.join(PREFIX, "bin"),
                                     os.environ.get("PATH", "")]))
    run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
         "-q", "--no-deps", "--target", str(work / "site"),
         "-Ccmake.define.ACCGEN_DRIVER_TARGET=accgen::remote", str(project)],
        env=env)
    return work / "site"


def drive(site, code, timeout=600):
    """Runs `code` after `import torch, torch_raccel` in a fresh
    interpreter; returns the completed process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), REPO]),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    prelude = "import torch, torch_raccel\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, env=env,
                          cwd=str(site), timeout=timeout)


def check(site, code, timeout=600):
    """drive(), which must succeed; returns its standard output."""
    r = drive(site, code, timeout)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-6000:]
    return r.stdout
