"""Structured loops on the device (Note [Structured loops on the device] in
runtime/src/emulate/Loops.cpp): the emulated operators of
runtime/include/accgen/runtime/detail/StructuredLoops.def run ATen's CPU
loop directly on the device tensors when it computes what the CPU kernel
would, and by the engine's rule otherwise.

Every case compares with the CPU (values, dtype, shape, strides) and checks
which path ran, through torch.<device>.structured_loop_counts().
"""
import os
import pathlib
import time

import pytest
import torch
import yaml

_SPECS = pathlib.Path(os.environ.get(
    "ACCGEN_TEST_SPECS", pathlib.Path(__file__).resolve().parents[2] / "specs"))


def _kinds():
    """The kind of each operator group the spec lists, by the group's base
    name: {"mul": "emulate", "add": "kernel"}."""
    with open(_SPECS / "operators.yaml", encoding="utf-8") as spec_file:
        entries = yaml.safe_load(spec_file)["operators"]
    return {entry["op"].split(".")[0].rstrip("_"): entry["kind"]
            for entry in entries}


KINDS = _kinds()


def _emulated(name):
    """Whether the spec registers operator `name` ("aten::add_.Tensor") with
    kind emulate: only those run the engine (a kernel entry runs its own)."""
    return KINDS.get(name.split("::")[1].split(".")[0].rstrip("_")) == "emulate"


def _ran_loop(mod, name, fn):
    """Calls `fn`; returns (its result, whether `name` ran its loop)."""
    before = mod.structured_loop_counts().get(name, 0)
    result = fn()
    mod.synchronize()
    return result, mod.structured_loop_counts().get(name, 0) > before


def _same(device_result, cpu_result):
    assert device_result.device.type != "cpu"
    assert device_result.dtype == cpu_result.dtype
    assert device_result.shape == cpu_result.shape
    if cpu_result.is_contiguous() or device_result.dim() == cpu_result.dim():
        assert device_result.stride() == cpu_result.stride()
    torch.testing.assert_close(device_result.cpu(), cpu_result,
                               equal_nan=True)


def _args(shapes, dtype, seed=0, positive=False):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for shape in shapes:
        if dtype.is_floating_point:
            t = torch.randn(shape, generator=gen, dtype=torch.float64)
            out.append((t.abs() + 0.5 if positive else t).to(dtype))
        else:
            out.append(torch.randint(1, 9, shape, generator=gen, dtype=dtype))
    return out


# name as structured_loop_counts() reports it, the call, its argument shapes,
# the dtypes it is run in, whether its divisors must be positive.
FUNCTIONAL = [
    ("aten::mul.Tensor", lambda a, b: a * b, [(5, 7), (5, 7)],
     [torch.float32, torch.float64, torch.int64, torch.bfloat16], False),
    ("aten::sub.Tensor", lambda a, b: torch.sub(a, b, alpha=3),
     [(5, 7), (7,)], [torch.float32, torch.int32], False),
    ("aten::div.Tensor", lambda a, b: a / b, [(5, 7), (5, 1)],
     [torch.float32, torch.float64], True),
    ("aten::neg", lambda a: -a, [(3, 4, 5)], [torch.float32, torch.int64],
     False),
    ("aten::addcmul", lambda a, b, c: torch.addcmul(a, b, c, value=0.5),
     [(4, 6), (4, 6), (6,)], [torch.float32, torch.float64], False),
    ("aten::addcdiv", lambda a, b, c: torch.addcdiv(a, b, c, value=-2),
     [(4, 6), (4, 6), (4, 6)], [torch.float32], True),
    ("aten::threshold_backward",
     lambda g, x: torch.ops.aten.threshold_backward(g, x, 0.25),
     [(8, 3), (8, 3)], [torch.float32, torch.float64], False),
    ("aten::sigmoid_backward", torch.ops.aten.sigmoid_backward,
     [(6, 2), (6, 2)], [torch.float32], False),
    ("aten::tanh_backward", torch.ops.aten.tanh_backward, [(6, 2), (6, 2)],
     [torch.float32], False),
    ("aten::exp", torch.exp, [(4, 5)], [torch.float32, torch.float64], False),
    ("aten::log", torch.log, [(4, 5)], [torch.float32], True),
    ("aten::sqrt", torch.sqrt, [(4, 5)], [torch.float32, torch.float64], True),
    ("aten::rsqrt", torch.rsqrt, [(4, 5)], [torch.float32], True),
    ("aten::reciprocal", torch.reciprocal, [(4, 5)], [torch.float32], True),
    ("aten::sigmoid", torch.sigmoid, [(4, 5)], [torch.float32], False),
    ("aten::tanh", torch.tanh, [(4, 5)], [torch.float32], False),
    ("aten::lerp.Scalar", lambda a, b: torch.lerp(a, b, 0.3),
     [(4, 5), (5,)], [torch.float32, torch.float64], False),
]


@pytest.mark.parametrize("name,fn,shapes,dtypes,positive", FUNCTIONAL,
                         ids=[case[0] for case in FUNCTIONAL])
def test_functional_forms_run_their_loop_and_match_the_cpu(
        device, mod, name, fn, shapes, dtypes, positive):
    for dtype in dtypes:
        cpu = _args(shapes, dtype, positive=positive)
        dev = [t.to(device) for t in cpu]
        result, ran = _ran_loop(mod, name, lambda: fn(*dev))
        _same(result, fn(*cpu))
        # Only emulate entries run the engine; a kernel entry runs its own
        # code, an unlisted operator its fallback.
        assert ran == _emulated(name), f"{name} in {dtype}"


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_strided_operands(device, mod, layout):
    a, b = _args([(6, 8), (6, 8)], torch.float32)
    views = {
        "transposed": lambda t: t.t(),
        "sliced": lambda t: t[::2, 1::3],
        "expanded": lambda t: t[:1].expand(6, 8),
    }[layout]
    expected = views(a) * views(b)
    result, ran = _ran_loop(
        mod, "aten::mul.Tensor",
        lambda: views(a.to(device)) * views(b.to(device)))
    _same(result, expected)
    assert ran == _emulated("aten::mul.Tensor")


@pytest.mark.parametrize("scalar", [2.5, 3, True,
                                    torch.tensor(0.5, dtype=torch.float64),
                                    torch.tensor(7)],
                         ids=["float", "int", "bool", "0-dim double",
                              "0-dim long"])
def test_cpu_scalars_of_other_dtypes_are_cast_as_on_the_cpu(device, mod,
                                                             scalar):
    a = _args([(4, 5)], torch.float32)[0]
    result, ran = _ran_loop(mod, "aten::mul.Tensor",
                            lambda: a.to(device) * scalar)
    _same(result, a * scalar)
    assert ran == _emulated("aten::mul.Tensor")
    # The caller's scalar keeps its dtype.
    if isinstance(scalar, torch.Tensor):
        assert scalar.dtype in (torch.float64, torch.int64)


def test_an_integer_tensor_times_a_float_goes_to_the_engine(device, mod):
    # The loop would read the int64 operand as floats: the engine's CPU
    # kernel casts it.
    a = _args([(4, 5)], torch.int64)[0]
    b = _args([(4, 5)], torch.float32)[0]
    for fn in (lambda x, y: x * y, lambda x, y: x * 2.5):
        result, ran = _ran_loop(mod, "aten::mul.Tensor",
                                lambda: fn(a.to(device), b.to(device)))
        _same(result, fn(a, b))
        assert not ran


def test_in_place_forms_write_self(device, mod):
    cpu = _args([(5, 6), (6,), (5, 6)], torch.float32, positive=True)
    dev = [t.to(device) for t in cpu]
    steps = [
        ("aten::mul_.Tensor", lambda x, y, z: x.mul_(y)),
        ("aten::mul_.Tensor", lambda x, y, z: x.mul_(0.9)),
        ("aten::add_.Tensor", lambda x, y, z: x.add_(z, alpha=-0.5)),
        ("aten::sub_.Tensor", lambda x, y, z: x.sub_(y)),
        ("aten::div_.Tensor", lambda x, y, z: x.div_(z)),
        ("aten::neg_", lambda x, y, z: x.neg_()),
        ("aten::addcmul_", lambda x, y, z: x.addcmul_(y, z, value=2)),
        ("aten::addcdiv_", lambda x, y, z: x.addcdiv_(y, z, value=0.1)),
    ]
    for name, fn in steps:
        self_before = dev[0]
        expected = fn(*cpu)
        result, ran = _ran_loop(mod, name, lambda: fn(*dev))
        assert result is self_before
        _same(dev[0], expected)
        assert ran == _emulated(name), name


def test_out_forms_write_out(device, mod):
    a, b = _args([(4, 6), (4, 6)], torch.float32, positive=True)
    for name, fn in [
        ("aten::mul.out", lambda x, y, o: torch.mul(x, y, out=o)),
        ("aten::div.out", lambda x, y, o: torch.div(x, y, out=o)),
        ("aten::sqrt.out", lambda x, y, o: torch.sqrt(x, out=o)),
        ("aten::addcmul.out",
         lambda x, y, o: torch.addcmul(x, x, y, value=3, out=o)),
    ]:
        out = torch.empty(4, 6, device=device)
        result, ran = _ran_loop(mod, name,
                                lambda: fn(a.to(device), b.to(device), out))
        assert result is out
        _same(out, fn(a, b, torch.empty(4, 6)))
        assert ran == _emulated(name), name


def test_out_forms_that_resize_or_cast_go_to_the_engine(device, mod):
    a, b = _args([(4, 6), (4, 6)], torch.float32)
    # An empty out= tensor is resized (silently, as on the CPU).
    out = torch.empty(0, device=device)
    _, ran = _ran_loop(mod, "aten::mul.out",
                       lambda: torch.mul(a.to(device), b.to(device), out=out))
    _same(out, a * b)
    assert not ran
    # A float64 out= tensor takes the float32 product cast.
    out = torch.empty(4, 6, dtype=torch.float64, device=device)
    _, ran = _ran_loop(mod, "aten::mul.out",
                       lambda: torch.mul(a.to(device), b.to(device), out=out))
    _same(out, torch.mul(a, b, out=torch.empty(4, 6, dtype=torch.float64)))
    assert not ran


def test_foreach_operators_run_the_loops_per_tensor(device, mod):
    # torch's device-generic foreach kernels call the per-tensor operators:
    # _foreach_mul_ with a number reaches mul.out (mul_.Scalar's kernel).
    ts = _args([(3, 3), (5,), (2, 4)], torch.float32, seed=3)
    dts = [t.to(device) for t in ts]
    _, ran = _ran_loop(mod, "aten::mul.out",
                       lambda: torch._foreach_mul_(dts, 0.9))
    torch._foreach_mul_(ts, 0.9)
    for d, t in zip(dts, ts):
        _same(d, t)
    assert ran == _emulated("aten::mul.out")


def test_in_place_into_another_dtype_goes_to_the_engine(device, mod):
    # float16 self, float32 other: the CPU computes in float32 and casts the
    # result back into self; the loop cannot, the engine does.
    x = _args([(4, 4)], torch.float16)[0]
    y = _args([(4, 4)], torch.float32, seed=1)[0]
    d = x.to(device)
    _, ran = _ran_loop(mod, "aten::mul_.Tensor", lambda: d.mul_(y.to(device)))
    _same(d, x.clone().mul_(y))
    assert not ran


@pytest.mark.parametrize("call", [
    lambda d, x, y: x.mul_(torch.ones(3, 5, 4, device=d)),
    lambda d, x, y: x.long().mul_(y),
    lambda d, x, y: x[:, :1].add_(x[:1, :].expand(5, 1)),
    lambda d, x, y: torch.mul(x, y, out=x[:1].expand(5, 4)),
], ids=["in-place broadcast", "in-place cast", "overlap", "out= overlap"])
def test_errors_are_the_cpu_kernels(device, call):
    x = torch.ones(5, 4)
    y = torch.full((5, 4), 0.5)
    with pytest.raises(RuntimeError) as on_cpu:
        call("cpu", x.clone(), y)
    with pytest.raises(RuntimeError) as on_device:
        call(device, x.to(device), y.to(device))
    assert (str(on_device.value).splitlines()[0]
            == str(on_cpu.value).splitlines()[0])


def test_a_cpu_tensor_with_a_device_tensor_is_refused(device):
    # The engine's check (Note [Device misuse]), not the iterator's.
    with pytest.raises(RuntimeError, match="cpu"):
        _ = torch.ones(5, 4, device=device) * torch.ones(5, 4)


def test_large_work_is_queued_by_the_engine(device, mod):
    # More than 1 MiB of operands: queued on the stream, the host goes on.
    a = torch.randn(1024, 512)
    d = a.to(device)
    result, ran = _ran_loop(mod, "aten::mul.Tensor", lambda: d * d)
    _same(result, a * a)
    assert not ran


def test_small_work_behind_a_busy_stream_is_queued(device, mod):
    a = _args([(8, 8)], torch.float32)[0]
    d = a.to(device)
    (d * d).add_(d)  # warm: both are queued once proven
    mod.synchronize()
    before = mod.structured_loop_counts().get("aten::mul.Tensor", 0)
    mod._sleep(300)
    start = time.perf_counter()
    result = d * d
    host = time.perf_counter() - start
    assert host < 0.15, f"the host waited {host:.3f} s for the stream"
    mod.synchronize()
    _same(result, a * a)
    assert mod.structured_loop_counts().get("aten::mul.Tensor", 0) == before


def test_the_second_device(device, mod, two_devices):
    a, b = _args([(4, 4), (4, 4)], torch.float32)
    d = f"{device}:1"
    result, ran = _ran_loop(mod, "aten::mul.Tensor",
                            lambda: a.to(d) * b.to(d))
    assert result.device == torch.device(d)
    _same(result, a * b)
    assert ran == _emulated("aten::mul.Tensor")


def test_autograd_through_loops(device):
    torch.manual_seed(0)
    x = torch.randn(6, 3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    dx = x.detach().to(device).requires_grad_()
    dw = w.detach().to(device).requires_grad_()
    for a, b in ((x, w), (dx, dw)):
        (torch.tanh(a * b) - a / (b.abs() + 1)).relu().sum().backward()
    torch.testing.assert_close(dx.grad.cpu(), x.grad)
    torch.testing.assert_close(dw.grad.cpu(), w.grad)
