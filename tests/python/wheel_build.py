"""accgen's wheel for the tests that use accgen as a vendor installs it
(test_wheel.py; test_fallback_error.py builds its backend from it): built
with `pip wheel` from this checkout, installed into a fresh venv, and the
environment in which nothing else of accgen is in reach.

The wheel builds in build-wheel/, beside the default preset's build/ and
at the same depth, so that ccache serves the objects that build made.
"""
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def run(cmd, **kwargs):
    result = subprocess.run([str(c) for c in cmd], capture_output=True,
                            text=True, **kwargs)
    assert result.returncode == 0, (
        f"{cmd} failed ({result.returncode}):\n{result.stdout[-4000:]}\n"
        f"{result.stderr[-4000:]}")
    return result


def clean_env(venv=None, **extra):
    """The environment with nothing of accgen in reach but `venv`'s: no
    other accgen on PATH, no CMAKE_PREFIX_PATH, no ACCGEN_* variable."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ACCGEN_") and k != "CMAKE_PREFIX_PATH"}
    path = [p for p in env.get("PATH", "").split(os.pathsep)
            if not os.path.exists(os.path.join(p, "accgen"))]
    if venv is not None:
        path.insert(0, str(pathlib.Path(venv) / "bin"))
    env["PATH"] = os.pathsep.join(path)
    env.update(extra)
    return env


def build_accgen_wheel(work):
    """The wheel into work/wheels, and a venv at work/site holding it over
    this environment's packages (torch among them)."""
    wheels = work / "wheels"
    env = clean_env(CCACHE_BASEDIR=str(REPO))
    # The default build's compiler (scikit-build-core would take Python's):
    # the same compile lines, which ccache serves from that build.
    cache = REPO / "build" / "CMakeCache.txt"
    if cache.is_file():
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_CXX_COMPILER:"):
                env["CXX"] = line.split("=", 1)[1]
            elif line.startswith("CMAKE_C_COMPILER:"):
                env["CC"] = line.split("=", 1)[1]
    # With build isolation, as `pip install accgen` builds from a source
    # tree: pip brings scikit-build-core into the build.
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels,
         REPO], env=env, timeout=1800)
    (wheel,) = wheels.glob("accgen-*.whl")
    venv = work / "site"
    # torch is the environment's (accgen reads its schemas), accgen only
    # the wheel's: this environment holds no accgen package.
    run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-index",
         "--no-deps", wheel], env=clean_env())
