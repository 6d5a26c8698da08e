"""The generated conformance suite catches a wrong kernel.

A copy of the example backend is built with its relu kernel (kernels/relu.cpp,
kind kernel) deliberately wrong for float32 only, and installed into a
directory of its own. The copy's operator family must fail on relu in
float32 and on nothing else, and the failure must name the function, the
dtype and the input. The checks of the autocast family must fail for a
policy the backend does not apply.
"""
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "generated_example"
PREFIX = os.environ.get("ACCGEN_PREFIX")

RIGHT = "p->out[i] = p->in[i] > T(0) ? p->in[i] : T(0);"
WRONG = """if constexpr (std::is_same_v<T, float>) {
      p->out[i] = p->in[i] > T(0) ? p->in[i] * T(2) : T(0);  // wrong on purpose
    } else {
      p->out[i] = p->in[i] > T(0) ? p->in[i] : T(0);
    }"""


@pytest.fixture(scope="module")
def broken_example(tmp_path_factory):
    if not PREFIX:
        pytest.skip("set ACCGEN_PREFIX (scripts/test.sh does) to build a copy "
                    "of the example backend")
    work = tmp_path_factory.mktemp("broken")
    copy = work / "example"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("build"))
    kernel = copy / "kernels" / "relu.cpp"
    source = kernel.read_text()
    assert RIGHT in source, "kernels/relu.cpp changed; update this test"
    kernel.write_text("#include <type_traits>\n" + source.replace(RIGHT, WRONG))
    site = work / "site"
    env = dict(os.environ, CCACHE_BASEDIR=str(work),
               PATH=os.pathsep.join([os.path.join(PREFIX, "bin"),
                                     os.environ.get("PATH", "")]))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "--no-build-isolation", "--no-deps", "--target",
                        str(site), str(copy)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return copy, site


def test_the_suite_fails_on_the_wrong_kernel_alone(broken_example):
    copy, site = broken_example
    env = dict(os.environ, PYTHONPATH=str(site),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    code = (
        "import sys, torch, torch_accel, pytest\n"
        f"assert torch_accel.__file__.startswith({str(site)!r}), torch_accel.__file__\n"
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-n', '2', "
        "'-m', 'operators', '-rf', 'tests/conformance']))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, cwd=str(copy), timeout=900)
    assert r.returncode == 1, r.stdout[-4000:] + r.stderr[-3000:]
    failed = set(re.findall(r"^FAILED \S+::test_operator\[([^\]]+)\]",
                            r.stdout, re.MULTILINE))
    # relu is registered with its group: relu and relu_.
    assert failed == {"relu-float32", "relu_-float32"}, (
        failed, r.stdout[-4000:])
    # The report names the function, its kind and form, the dtype, the input
    # and the difference.
    assert re.search(r"relu \(kernel, functional\) on accel, float32, input \d "
                     r"\(OpInfo 'nn.functional.relu', call \d: self=\(\d+(, \d+)*\) "
                     r"float32\), value 0 differs from the CPU: largest difference",
                     r.stdout), r.stdout[-4000:]


def _example_suite():
    spec_path = EXAMPLE / "tests" / "conformance" / "backend_spec.py"
    spec = importlib.util.spec_from_file_location("backend_spec", spec_path)
    backend_spec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend_spec)
    conformance = importlib.import_module(backend_spec.PACKAGE + "._conformance")
    return conformance, conformance.Suite(backend_spec)


def test_an_autocast_policy_the_backend_does_not_apply_fails(device):
    conformance, suite = _example_suite()
    # mm is lower_precision_fp in the example's autocast.yaml.
    suite.check_autocast(conformance.AutocastCase("mm", "lower_precision_fp", ""))
    for wrong in ("fp32", "promote", "banned"):
        with pytest.raises(conformance.ConformanceError, match="mm"):
            suite.check_autocast(conformance.AutocastCase("mm", wrong, "no"))
    # exp is fp32: run in float16 it would be lower_precision_fp.
    with pytest.raises(conformance.ConformanceError, match="exp"):
        suite.check_autocast(conformance.AutocastCase("exp", "lower_precision_fp", ""))

