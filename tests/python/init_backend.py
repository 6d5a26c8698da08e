"""What the suites of an `accgen init` backend share (test_init_backend.py,
test_init_backend_suites.py): its build, made once per test run, and the
ways to drive it; the other backends built by the tests (remote_backend.py,
test_fallback_error.py) use its settings and `run` too.

PyTorch allows one PrivateUse1 backend per process, and the example backend
is installed in this environment with autoload on. The init backend is
therefore installed into a directory of its own and driven in subprocesses
that turn autoload off and import it explicitly.
"""
import os
import subprocess
import sys
import textwrap

ACCGEN = os.environ.get("ACCGEN_BIN")
PREFIX = os.environ.get("ACCGEN_PREFIX")
HERE = os.path.dirname(os.path.abspath(__file__))
# The error-policy backend, built with build isolation (its torch in a
# temporary environment of pip's, so no compiler cache serves it),
# unoptimised: it compiles in about half the time of -O3, and its tests
# check behaviour, not speed. The example, the `accgen init` project and
# the remote port are built as a vendor builds them, and share the
# runtime's objects through the compiler cache. scikit-build-core reads its
# cmake.define setting from this variable too.
TEST_ONLY_BUILD = {"SKBUILD_CMAKE_DEFINE": "CMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG"}


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (
        f"{cmd} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def build_init_backend(work):
    """`accgen init second` in `work`, built and installed as its README
    says into work/site; returns that directory."""
    project = work / "second"
    created = run([ACCGEN, "init", "second", "--dir", str(project)])
    # The command init tells the user to run next.
    (next_line,) = [line for line in created.stdout.splitlines()
                    if line.startswith("next: ")]
    next_command = next_line[len("next: "):].split()
    assert next_command == ["pip", "install", "--no-build-isolation",
                            str(project)], next_line
    assert "fallback: emulate" in (project / "specs" / "backend.yaml").read_text()
    target = work / "site"
    # The command the README gives, with accgen's bin/ on PATH and nothing
    # else: CMake finds accgen's package from PATH. CCACHE_BASEDIR makes
    # compiler command lines relative to the temporary directory, so ccache
    # recognises the same sources in the next run.
    env = dict(os.environ, CCACHE_BASEDIR=str(work),
               PATH=os.pathsep.join([os.path.join(PREFIX, "bin"),
                                     os.environ.get("PATH", "")]))
    env.pop("CMAKE_PREFIX_PATH", None)
    # Exactly that command, into a directory of its own (PyTorch takes one
    # PrivateUse1 backend per process, and the example is installed here).
    run([sys.executable, "-m"] + next_command +
        ["-q", "--no-deps", "--target", str(target)], env=env)
    return target


def drive(site, code):
    env = dict(os.environ, PYTHONPATH=str(site), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    prelude = "import torch, torch_second\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, env=env, cwd=str(site))


def run_suites_on(second_backend, names, *pytest_args):
    # Runs suites of this directory against the freshly initialised backend;
    # every test of them must run and pass.
    project = second_backend.parent / "second"
    suites = [os.path.join(HERE, name) for name in names]
    env = dict(os.environ, PYTHONPATH=str(second_backend),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0",
               ACCGEN_TEST_SPECS=str(project / "specs"))
    r = subprocess.run(
        [sys.executable, "-c", "import torch_second, sys, pytest\n"
         "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', "
         f"*{suites!r}, *{list(pytest_args)!r}]))"],
        capture_output=True, text=True, env=env, cwd=str(project))
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-2000:]
