"""The generated conformance suite catches a wrong kernel.

The example backend's relu (kernels/relu.cpp, kind kernel) is replaced, in
the suite's processes only, by a kernel that is wrong for float32 alone
(registered over it for the PrivateUse1 key, as a vendor's kernel is
reached: through the dispatcher). The suite's operator family must fail on
relu in float32 and on nothing else near it (relu in the other dtypes, its
backward and the operators that share its code paths), and the failure
must name the function, the dtype and the input. The suite passes in full
without the wrong kernel (scripts/test.sh runs it under ASan), so the run
here takes the cases a wrong relu could reach, not the whole family again.
The checks of the autocast family must fail for a policy the backend does
not apply.
"""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "generated_example"

# A pytest plugin (loaded with -p by the suite's workers too) that registers
# the wrong relu and relu_ over the backend's.
WRONG_RELU = """
import torch

_library = torch.library.Library("aten", "IMPL")


def _wrong(x):
    out = torch.relu(x.cpu())
    if x.dtype == torch.float32:
        out = out * 2  # wrong on purpose
    return out.to(x.device)


def _wrong_(x):
    return x.copy_(_wrong(x))


_library.impl("relu", _wrong, "PrivateUse1")
_library.impl("relu_", _wrong_, "PrivateUse1")
"""

# The operator cases a wrong relu could reach: relu itself in every dtype,
# its backward (threshold_backward), the clamps and activations beside it,
# and the copies that move its results.
NEAR_RELU = ("relu or threshold_backward or clamp or gelu or sigmoid or "
             "tanh or max_pool2d or _copy_from")


def test_the_suite_fails_on_the_wrong_kernel_alone(tmp_path, device):
    (tmp_path / "wrong_relu.py").write_text(WRONG_RELU)
    code = (
        "import sys, pytest\n"
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', "
        f"'wrong_relu', '-m', 'operators', '-k', {NEAR_RELU!r}, '-rf', "
        "'tests/conformance']))\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, cwd=str(EXAMPLE), timeout=900)
    assert r.returncode == 1, r.stdout[-4000:] + r.stderr[-3000:]
    failed = set(re.findall(r"^FAILED \S+::test_operator\[([^\]]+)\]",
                            r.stdout, re.MULTILINE))
    # relu is registered with its group: relu and relu_.
    assert failed == {"relu-float32", "relu_-float32"}, (
        failed, r.stdout[-4000:])
    # ... among as many cases as the selection names, the rest passing.
    passed = re.search(r"(\d+) passed", r.stdout)
    assert passed and int(passed.group(1)) >= 150, r.stdout[-2000:]
    # The report names the function, its kind and form, the dtype, the input
    # and the difference.
    assert re.search(r"relu \(kernel, functional\) on accel, float32, input \d "
                     r"\(OpInfo 'nn.functional.relu', call \d: self=\(\d+(,|(, \d+)+)\) "
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


# A relu that is right but for NaN, which it makes 0 (a kernel written as
# `x > 0 ? x : 0`): registered over the backend's in a process of its own.
NAN_DROPPING_RELU = """
import sys
import torch

_library = torch.library.Library("aten", "IMPL")


def _relu(x):
    out = torch.relu(x.cpu())
    return out.nan_to_num(nan=0.0, posinf=float("inf"),
                          neginf=float("-inf")).to(x.device)


_library.impl("relu", _relu, "PrivateUse1")
sys.path.insert(0, {tests!r})
from test_conformance import _example_suite

conformance, suite = _example_suite()
case = conformance.OperatorCase("relu", "kernel", "functional", "relu",
                                "float32")
try:
    suite.check_operator(case)
except conformance.ConformanceError as error:
    print("FAILED:", error)
    sys.exit(1)
print("PASSED")
"""


def test_a_kernel_that_drops_nan_fails_on_special_values(device):
    # The suite's own inputs hold no NaN: its special-values variant of a
    # pointwise function is what finds the fault.
    code = NAN_DROPPING_RELU.format(tests=str(pathlib.Path(__file__).parent))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, cwd=str(EXAMPLE), timeout=300)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"relu \(kernel, functional\) on accel, float32, input \d "
                     r".*NaN, infinities and -0\.0 in self.* differs from the "
                     r"CPU", r.stdout), r.stdout[-3000:]


def test_the_example_kernels_treat_special_values_as_the_cpu(device):
    conformance, suite = _example_suite()
    for name, form in (("relu", "functional"), ("relu_", "inplace"),
                       ("add.Tensor", "functional")):
        for dtype in ("float32", "float64"):
            suite.check_operator(conformance.OperatorCase(
                name, "kernel", form, name.split(".")[0], dtype))


def test_opinfo_samples_are_the_entrys_own_without_torchs_tracking(checks):
    # Note [OpInfo samples without torch's tracking]: the suite draws an
    # entry's samples from its sample function. They are the samples
    # `OpInfo.sample_inputs` gives, in the same order, and the same values on
    # every call; and `sample_inputs` still wraps them in torch's tracking
    # iterator, the cost the suite avoids.
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == "nn.functional.conv2d")
    tracked = op.sample_inputs("cpu", torch.float32)
    assert type(tracked).__name__ == "TrackedInputIter", type(tracked)

    def shapes(samples):
        return [(tuple(s.input.shape),
                 [tuple(a.shape) for a in s.args if isinstance(a, torch.Tensor)],
                 sorted(s.kwargs)) for s in samples]

    ours = list(checks.opinfo_samples(op, "cpu", torch.float32))
    assert ours and shapes(ours) == shapes(tracked)
    again = list(checks.opinfo_samples(op, "cpu", torch.float32))
    for first, second in zip(ours, again):
        torch.testing.assert_close(first.input, second.input)
