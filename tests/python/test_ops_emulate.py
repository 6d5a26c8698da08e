"""Operators of the example backend against the same operators on the CPU.

Every case runs an operator on CPU tensors and on copies of them on the
device, and compares the results (values, dtypes, shapes). The tables cover
the emulated operators of specs/operators.yaml and the kernel, stub and
fallback ones, over several dtypes and layouts: contiguous, transposed,
sliced with steps, broadcast and zero-size inputs, and the out= and in-place
forms of each operator that has them.
"""
import itertools

import pytest
import torch

FLOATS = [torch.float32, torch.float64]
INTS = [torch.int64, torch.int32]


def make(shape, dtype, *, positive=False, seed=0, low=None, high=None):
    """A deterministic CPU tensor of `shape` and `dtype`."""
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=gen, dtype=torch.float64)
        if positive:
            t = t.abs() + 0.5
        return t.to(dtype)
    lo = 1 if positive else (-9 if low is None else low)
    hi = 10 if high is None else high
    return torch.randint(lo, hi, shape, generator=gen, dtype=dtype)


def layouts(shape, dtype, **kw):
    """The same values in several memory layouts: contiguous, transposed
    (non-contiguous), a slice with a step, and an expanded (stride 0) view."""
    base = make(shape, dtype, **kw)
    yield "contiguous", base
    if len(shape) >= 2:
        yield "transposed", make(shape[::-1], dtype, **kw).transpose(0, -1)
    wide = make((*shape[:-1], shape[-1] * 2), dtype, **kw)
    yield "strided", wide[..., ::2]
    if len(shape) >= 2:
        row = make((1, *shape[1:]), dtype, **kw)
        yield "expanded", row.expand(shape)


def to_dev(x, device):
    if isinstance(x, torch.Tensor):
        # Keep the layout: copy into a device tensor with the same strides
        # where the layout is a plain view of a bigger block.
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(to_dev(v, device) for v in x)
    return x


def to_cpu(x):
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(v) for v in x)
    return x


def assert_same(got, want, *, exact=False):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), type(got)
        got = got.cpu()
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert got.shape == want.shape, (got.shape, want.shape)
        if exact or not want.dtype.is_floating_point:
            assert torch.equal(got, want), (got, want)
        else:
            torch.testing.assert_close(got, want, equal_nan=True)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, exact=exact)
    else:
        assert got == want, (got, want)


def device_view(cpu_view, device):
    """A device tensor with the same values and the same strides as
    `cpu_view` (a view of a bigger CPU block), so that the device operator
    sees the same non-contiguous layout."""
    base = cpu_view
    while base._base is not None:
        base = base._base
    dev_base = base.to(device)
    return dev_base.as_strided(cpu_view.shape, cpu_view.stride(),
                               cpu_view.storage_offset())


def check(fn, args, device, *, exact=False):
    """fn on CPU and on the device: same results."""
    want = fn(*args)
    dev_args = [device_view(a, device) if isinstance(a, torch.Tensor) else a
                for a in args]
    got = fn(*dev_args)
    assert_same(got, want, exact=exact)
    return dev_args


# --------------------------------------------------------------- unary math

UNARY = {
    # name: (function, needs positive input, dtypes)
    "exp": (torch.exp, False, FLOATS),
    "log": (torch.log, True, FLOATS),
    "log1p": (torch.log1p, True, FLOATS),
    "sqrt": (torch.sqrt, True, FLOATS),
    "rsqrt": (torch.rsqrt, True, FLOATS),
    "sin": (torch.sin, False, FLOATS),
    "cos": (torch.cos, False, FLOATS),
    "tanh": (torch.tanh, False, FLOATS),
    "sigmoid": (torch.sigmoid, False, FLOATS),
    "neg": (torch.neg, False, FLOATS + INTS),
    "reciprocal": (torch.reciprocal, True, FLOATS),
    "sign": (torch.sign, False, FLOATS + INTS),
    "floor": (torch.floor, False, FLOATS),
    "ceil": (torch.ceil, False, FLOATS),
    "round": (torch.round, False, FLOATS),
    "abs": (torch.abs, False, FLOATS + INTS),
    "relu": (torch.relu, False, FLOATS + INTS),
    "gelu": (torch.nn.functional.gelu, False, FLOATS),
    "isnan": (torch.isnan, False, FLOATS),
    "logical_not": (torch.logical_not, False, FLOATS + [torch.bool]),
}


def unary_cases():
    for name, (_, positive, dtypes) in UNARY.items():
        for dtype in dtypes:
            yield pytest.param(name, dtype, id=f"{name}-{str(dtype)[6:]}")


@pytest.mark.parametrize("name,dtype", list(unary_cases()))
def test_unary(device, name, dtype):
    fn, positive, _ = UNARY[name]
    for _, x in layouts((5, 7), dtype, positive=positive):
        check(fn, [x], device)
    check(fn, [make((0, 3), dtype)], device)
    check(fn, [make((), dtype, positive=positive)], device)


INPLACE_UNARY = ["exp", "log", "sqrt", "sin", "tanh", "sigmoid", "neg",
                 "reciprocal", "floor", "abs", "relu"]


@pytest.mark.parametrize("name", INPLACE_UNARY)
def test_unary_inplace_and_out(device, name):
    _, positive, _ = UNARY[name]
    for layout, x in layouts((4, 6), torch.float32, positive=positive):
        if layout == "expanded":
            continue  # in-place writes to overlapping memory are refused
        want = getattr(x.clone(), name + "_")()
        d = device_view(x.clone(), device)
        got = getattr(d, name + "_")()
        assert got is d, "an in-place operator returns its self"
        assert_same(d, want)
    if name == "relu":
        return  # relu has no out= form
    x = make((3, 5), torch.float32, positive=positive)
    fn = getattr(torch, name)
    want = fn(x)
    for out_shape in [(3, 5), (0,), (15,)]:
        out = torch.empty(out_shape, device=device)
        with pytest.warns(UserWarning) if out_shape == (15,) else _nothing():
            r = fn(x.to(device), out=out)
        assert r is out
        assert_same(out, want)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ------------------------------------------------------------ binary and more

BINARY = {
    "add": (torch.add, FLOATS + INTS + [torch.bool]),
    "sub": (torch.sub, FLOATS + INTS),
    "mul": (torch.mul, FLOATS + INTS + [torch.bool]),
    "div": (torch.div, FLOATS),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), FLOATS),
    "remainder": (torch.remainder, FLOATS),
    "pow": (torch.pow, FLOATS),
    "maximum": (torch.maximum, FLOATS + INTS),
    "minimum": (torch.minimum, FLOATS + INTS),
    "eq": (torch.eq, FLOATS + INTS),
    "ne": (torch.ne, FLOATS + INTS),
    "lt": (torch.lt, FLOATS + INTS),
    "le": (torch.le, FLOATS + INTS),
    "gt": (torch.gt, FLOATS + INTS),
    "ge": (torch.ge, FLOATS + INTS),
    "logical_and": (torch.logical_and, FLOATS + [torch.bool]),
    "bitwise_and": (torch.bitwise_and, INTS + [torch.bool]),
    "clamp": (lambda a, b: torch.clamp(a, min=b), FLOATS),
}

SHAPE_PAIRS = [((4, 5), (4, 5)), ((4, 5), (5,)), ((2, 1, 3), (1, 4, 1)),
               ((3, 1), ()), ((0, 2), (2,))]


def binary_cases():
    for name, (_, dtypes) in BINARY.items():
        for dtype in dtypes:
            yield pytest.param(name, dtype, id=f"{name}-{str(dtype)[6:]}")


@pytest.mark.parametrize("name,dtype", list(binary_cases()))
def test_binary(device, name, dtype):
    fn, _ = BINARY[name]
    positive = name in ("div", "div_floor", "remainder", "pow")
    for sa, sb in SHAPE_PAIRS:
        a = make(sa, dtype, seed=1, positive=positive)
        b = make(sb, dtype, seed=2, positive=positive)
        check(fn, [a, b], device)
    for _, a in layouts((4, 6), dtype, positive=positive):
        check(fn, [a, make((4, 6), dtype, seed=3, positive=positive)], device)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum"])
def test_binary_mixed_dtypes_and_scalars(device, name):
    fn, _ = BINARY[name]
    a = make((3, 4), torch.float32, seed=1, positive=True)
    i = make((3, 4), torch.int64, seed=2, positive=True)
    h = make((4,), torch.float64, seed=3, positive=True)
    check(fn, [a, i], device)  # promoted to float32
    check(fn, [i, h], device)  # promoted to float64
    if name != "maximum":  # maximum takes tensors only
        check(lambda x: fn(x, 2), [a], device)  # a Python scalar
        check(lambda x: fn(x, 2.5), [i], device)  # int tensor, float scalar
    # A 0-dim CPU tensor mixes with device tensors like a scalar.
    s = torch.tensor(1.5)
    assert_same(fn(a.to(device), s), fn(a, s))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "pow"])
def test_binary_out_and_inplace(device, name):
    fn, _ = BINARY[name]
    a = make((4, 5), torch.float32, seed=1, positive=True)
    b = make((5,), torch.float32, seed=2, positive=True)
    want = fn(a, b)
    out = torch.empty(0, device=device)
    r = fn(a.to(device), b.to(device), out=out)
    assert r is out
    assert_same(out, want)
    # Into a non-contiguous window of a bigger tensor, which must stay
    # untouched around it.
    big = torch.zeros(5, 8, device=device)
    window = big[:4, 2:7]
    r = fn(a.to(device), b.to(device), out=window)
    assert r is window
    assert_same(big[:4, 2:7], want)
    assert_same(big[4], torch.zeros(8))
    assert_same(big[:, :2], torch.zeros(5, 2))
    if hasattr(torch.Tensor, name + "_"):
        d = a.to(device)
        getattr(d, name + "_")(b.to(device))
        assert_same(d, want)


def test_where_and_masked_fill(device):
    cond = make((4, 5), torch.bool, seed=1)
    a = make((4, 5), torch.float32, seed=2)
    b = make((5,), torch.float32, seed=3)
    check(torch.where, [cond, a, b], device)
    check(lambda c, x: x.masked_fill(c, -1.0), [cond, a], device)
    check(lambda c, x: x.masked_fill(c, torch.tensor(2.0)), [cond, a], device)
    d = a.to(device)
    d.masked_fill_(cond.to(device), 7.0)
    assert_same(d, a.masked_fill(cond, 7.0))


@pytest.mark.parametrize("dtype", FLOATS)
def test_pointwise_ternary(device, dtype):
    a, b, c = (make((3, 4), dtype, seed=s, positive=True) for s in (1, 2, 3))
    check(lambda x, y, z: torch.addcmul(x, y, z, value=0.5), [a, b, c], device)
    check(lambda x, y, z: torch.addcdiv(x, y, z, value=2), [a, b, c], device)
    check(lambda x, y: torch.lerp(x, y, 0.3), [a, b], device)
    check(lambda x: torch.clamp(x, 0.7, 1.2), [a], device)
    check(lambda x, y, z: torch.clamp(x, y, z), [a, b, b + 0.5], device)
    check(lambda x: torch.clamp_min(x, 1.0), [a], device)


# --------------------------------------------------------------- reductions

REDUCTIONS = {
    "sum": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(1),
    "sum_dims_keepdim": lambda x: x.sum((0, 2), keepdim=True),
    "sum_dtype": lambda x: x.sum(1, dtype=torch.float64),
    "mean_dim": lambda x: x.mean(-1),
    "mean": lambda x: x.mean(),
    "prod_dim": lambda x: x.prod(1),
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "max_dim": lambda x: tuple(x.max(1)),
    "min_dim_keepdim": lambda x: tuple(x.min(0, keepdim=True)),
    "amax": lambda x: x.amax((0, 1)),
    "amin": lambda x: x.amin(-1),
    "argmax": lambda x: x.argmax(),
    "argmax_dim": lambda x: x.argmax(2),
    "argmin_dim": lambda x: x.argmin(1, keepdim=True),
    "std": lambda x: x.std(1),
    "var": lambda x: x.var(0, correction=0),
    "all": lambda x: (x > 0).all(),
    "any": lambda x: (x > 1).any(),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", FLOATS)
def test_reductions(device, name, dtype):
    fn = REDUCTIONS[name]
    for layout, x in layouts((3, 4, 5), dtype):
        check(fn, [x], device)


@pytest.mark.parametrize("name", ["sum", "sum_dim", "max", "max_dim",
                                  "argmax_dim", "prod_dim"])
def test_reductions_int(device, name):
    check(REDUCTIONS[name], [make((3, 4, 5), torch.int64, low=-3, high=4)],
          device)


def test_reduction_out(device):
    x = make((4, 6), torch.float32)
    out = torch.empty(0, device=device)
    torch.sum(x.to(device), 1, out=out)
    assert_same(out, x.sum(1))
    values = torch.empty(0, device=device)
    indices = torch.empty(0, dtype=torch.long, device=device)
    torch.max(x.to(device), 0, out=(values, indices))
    want = x.max(0)
    assert_same(values, want.values)
    assert_same(indices, want.indices)


# ---------------------------------------------------------- matrix products

MATMUL_SHAPES = [
    ((5,), (5,)),  # dot
    ((3, 5), (5,)),  # mv
    ((5,), (5, 2)),  # vector-matrix
    ((3, 5), (5, 2)),  # mm
    ((4, 3, 5), (4, 5, 2)),  # bmm
    ((4, 3, 5), (5, 2)),  # batched-broadcast
    ((2, 1, 3, 5), (4, 5, 2)),  # broadcast batch dimensions
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_paths(device, sa, sb, dtype):
    a = make(sa, dtype, seed=1)
    b = make(sb, dtype, seed=2)
    check(torch.matmul, [a, b], device)


def test_mm_family(device):
    a, b = make((3, 5), torch.float32, seed=1), make((5, 4), torch.float32, seed=2)
    bias = make((4,), torch.float32, seed=3)
    check(torch.mm, [a, b], device)
    check(torch.mm, [a, make((4, 5), torch.float32, seed=4).t()], device)
    check(lambda c, x, y: torch.addmm(c, x, y, beta=0.5, alpha=2), [bias, a, b],
          device)
    ba, bb = make((2, 3, 5), torch.float64, seed=5), make((2, 5, 4), torch.float64, seed=6)
    check(torch.bmm, [ba, bb], device)
    check(lambda c, x, y: torch.baddbmm(c, x, y, alpha=0.5),
          [make((2, 3, 4), torch.float64, seed=7), ba, bb], device)
    check(torch.mv, [a, make((5,), torch.float32, seed=8)], device)
    check(torch.dot, [bias, bias], device)
    check(torch.nn.functional.linear, [a, make((4, 5), torch.float32, seed=9), bias],
          device)
    out = torch.empty(3, 4, device=device)
    torch.mm(a.to(device), b.to(device), out=out)
    assert_same(out, a @ b)


def test_shape_errors_come_back_as_the_cpu_error(device):
    a, b = make((3, 4), torch.float32), make((5, 6), torch.float32)
    with pytest.raises(RuntimeError) as cpu_error:
        torch.mm(a, b)
    with pytest.raises(RuntimeError) as dev_error:
        torch.mm(a.to(device), b.to(device))
    assert str(dev_error.value) == str(cpu_error.value)
    with pytest.raises(RuntimeError, match="must match the size"):
        a.to(device) + b.to(device)
    # An error raised by a CPU kernel on the device memory (not by the
    # shape checks that precede it) arrives with its type and message.
    index = torch.tensor([0, 7])
    with pytest.raises(IndexError) as cpu_index:
        torch.index_select(a, 0, index)
    with pytest.raises(IndexError) as dev_index:
        torch.index_select(a.to(device), 0, index.to(device))
    assert str(dev_index.value) == str(cpu_index.value)
    # The device stays usable after errors.
    assert_same(a.to(device) * 2, a * 2)


# -------------------------------------------------- joining and indexing

def test_cat_and_stack(device):
    xs = [make((2, 3), torch.float32, seed=s) for s in range(3)]
    check(lambda *t: torch.cat(t), xs, device)
    check(lambda *t: torch.cat(t, dim=1), xs, device)
    check(lambda *t: torch.stack(t, dim=1), xs, device)
    check(lambda a, b: torch.cat([a.t(), b.t()]), xs[:2], device)
    check(lambda a, b: torch.cat([a, b[:0]]), xs[:2], device)
    check(lambda a, b: torch.cat([a.int(), b]), xs[:2], device)  # promotes
    out = torch.empty(0, device=device)
    torch.cat([x.to(device) for x in xs], out=out)
    assert_same(out, torch.cat(xs))


def test_indexing(device):
    x = make((5, 6), torch.float32)
    idx = torch.tensor([4, 0, 2, 2])
    mask = x > 0
    check(lambda t, i: torch.index_select(t, 1, i), [x, idx], device)
    check(lambda t, i: t[i], [x, idx], device)
    check(lambda t, i: t[:, i], [x, idx], device)
    check(lambda t, i, j: t[i, j], [x, idx, idx], device)
    check(lambda t, m: t[m], [x, mask], device)
    check(lambda t, i: torch.gather(t, 1, i), [x, torch.tensor([[0, 1], [2, 3],
                                                               [4, 5], [1, 1],
                                                               [0, 0]])], device)


def test_data_dependent_shapes(device):
    x = make((4, 6), torch.int64, low=-2, high=3)
    check(torch.nonzero, [x], device)
    check(lambda t: torch.nonzero(t, as_tuple=True), [x], device)
    check(lambda t: torch.masked_select(t, t > 0), [x], device)
    check(torch.unique, [x], device)
    check(lambda t: torch.unique(t, return_inverse=True, return_counts=True),
          [x], device)
    check(lambda t: torch.unique(t.flatten(), sorted=True), [x], device)
    empty = torch.zeros(3, 3)
    check(torch.nonzero, [empty], device)


def test_sort_topk(device):
    x = make((4, 7), torch.float32)
    check(lambda t: tuple(torch.sort(t, dim=1)), [x], device)
    check(lambda t: tuple(torch.sort(t, dim=0, descending=True)), [x], device)
    check(lambda t: tuple(torch.topk(t, 3)), [x], device)
    check(lambda t: tuple(torch.topk(t.t(), 2, largest=False)), [x], device)


def test_factories(device):
    assert_same(torch.arange(10, device=device), torch.arange(10))
    assert_same(torch.arange(1, 4, 0.5, device=device), torch.arange(1, 4, 0.5))
    assert_same(torch.ones(2, 3, device=device), torch.ones(2, 3))
    assert_same(torch.zeros(4, dtype=torch.int32, device=device),
                torch.zeros(4, dtype=torch.int32))
    assert_same(torch.full((2, 2), 3.5, device=device), torch.full((2, 2), 3.5))
    assert_same(torch.eye(3, device=device), torch.eye(3))
    assert_same(torch.ones(3, device=device, dtype=torch.bool),
                torch.ones(3, dtype=torch.bool))


def test_cumsum_per_operator_fallback(device):
    x = make((3, 4), torch.float32)
    check(lambda t: torch.cumsum(t, 1), [x], device)
    d = x.to(device)
    d.cumsum_(0)
    assert_same(d, x.cumsum(0))


# ------------------------------------------------------- views and aliasing

def test_views_alias_their_base(device):
    x = torch.zeros(4, 6, device=device)
    v = x[1:3, ::2]
    v.add_(1)
    t = x.t()
    t.mul_(2)
    expect = torch.zeros(4, 6)
    expect[1:3, ::2] += 1
    expect *= 2
    assert_same(x, expect)
    # A view through an emulated operator (unfold) stays a view.
    y = torch.arange(8.0, device=device)
    u = y.unfold(0, 3, 2)
    assert u.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    u[0, 1] = 100.0
    assert y[1].item() == 100.0
    assert_same(u, torch.arange(8.0).index_put_((torch.tensor([1]),),
                                                torch.tensor(100.0)).unfold(0, 3, 2))


def test_out_into_views_and_self_aliasing(device):
    x = make((6,), torch.float32)
    d = x.to(device)
    torch.add(d[:3], d[3:], out=d[3:])
    want = x.clone()
    torch.add(want[:3], want[3:], out=want[3:])
    assert_same(d, want)
    d = x.to(device)
    d.add_(d)
    assert_same(d, x * 2)
    # Partial overlap is refused exactly as on the CPU.
    with pytest.raises(RuntimeError) as cpu_error:
        torch.add(x[:4], 1, out=x[2:])
    with pytest.raises(RuntimeError) as dev_error:
        torch.add(d[:4], 1, out=d[2:])
    assert str(dev_error.value) == str(cpu_error.value)


def test_out_resize_warns_like_cpu(device):
    x = make((2, 3), torch.float32)
    out = torch.ones(4, device=device)
    with pytest.warns(UserWarning, match="resized"):
        torch.exp(x.to(device), out=out)
    assert_same(out, torch.exp(x))


# ---------------------------------------------------------- random numbers

def test_random_numbers_follow_the_device_generator(device, mod):
    def draw():
        t = torch.empty(1000, device=device)
        return (t.uniform_(), torch.empty(100, device=device).normal_(2, 3),
                torch.empty(50, device=device).random_(0, 10),
                torch.bernoulli(torch.full((64,), 0.5, device=device)))

    mod.manual_seed(1234)
    first = to_cpu(draw())
    mod.manual_seed(1234)
    second = to_cpu(draw())
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    # The CPU generator is not the one used: drawing from it in between
    # changes nothing on the device.
    mod.manual_seed(1234)
    torch.empty(1000).uniform_()
    assert torch.equal(to_cpu(draw())[0], first[0])
    # torch.manual_seed seeds the device too, like every device.
    torch.manual_seed(1234)
    assert torch.equal(to_cpu(draw())[0], first[0])
    # Distributions look right.
    u, n, r, b = first
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.05
    assert abs(n.mean() - 2) < 1.0 and 2 < n.std() < 4
    assert r.min() >= 0 and r.max() < 10 and torch.equal(r, r.round())
    assert set(b.unique().tolist()) <= {0.0, 1.0}
    # An explicit device generator.
    g = torch.Generator(device=device)
    g.manual_seed(7)
    a = torch.empty(10, device=device).uniform_(generator=g)
    g.manual_seed(7)
    b2 = torch.empty(10, device=device).uniform_(generator=g)
    assert torch.equal(a.cpu(), b2.cpu())
    # A CPU generator is refused, as on other devices.
    with pytest.raises(RuntimeError, match="device type for generator"):
        torch.empty(3, device=device).uniform_(generator=torch.Generator())
    # bernoulli_ with a probability, random_ bounds.
    mod.manual_seed(5)
    p = torch.empty(2000, device=device).bernoulli_(0.25)
    assert abs(p.mean().item() - 0.25) < 0.05


# --------------------------------------------------------------- dtypes

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision(device, dtype):
    a = make((4, 8), dtype, seed=1)
    b = make((8, 3), dtype, seed=2)
    check(torch.add, [a, a], device)
    check(torch.mul, [a, a], device)
    check(torch.mm, [a, b], device)
    check(lambda x: x.sum(1), [a], device)
    check(lambda x: torch.softmax(x, 1), [a], device)


@pytest.mark.parametrize("name,dtype", list(itertools.product(
    ["add", "mul", "eq"], [torch.complex64])))
def test_complex(device, name, dtype):
    fn, _ = BINARY[name]
    a = torch.randn(3, 4, dtype=dtype)
    b = torch.randn(3, 4, dtype=dtype)
    check(fn, [a, b], device)


# ---------------------------------------------------------- several devices

def test_operators_run_on_the_device_of_their_arguments(device, two_devices):
    a = make((3, 4), torch.float32, seed=1)
    b = make((3, 4), torch.float32, seed=2)
    second = torch.device(device, 1)
    cases = {
        "mul": lambda x, y: x * y,  # through its out= overload
        "mul_": lambda x, y: x.clone().mul_(y),  # in place
        "sum": lambda x, y: x.sum(1),
        "nonzero": lambda x, y: (x > 0).nonzero(),  # copied once
        "cat": lambda x, y: torch.cat([x, y]),
        "uniform_": lambda x, y: x.clone().uniform_(),
    }
    for name, fn in cases.items():
        got = fn(a.to(second), b.to(second))
        assert got.device == second, name
        if name != "uniform_":
            assert_same(got, fn(a, b))
    with pytest.raises(RuntimeError, match="same device"):
        torch.mul(a.to(device), b.to(second))


def test_result_shapes_follow_every_argument(device):
    # Note [Shape cache]: results of the same operator keep the shapes and
    # dtypes their own arguments give, call after call.
    for shape, other in [((3,), (1,)), ((2, 3), (1,)), ((3,), (1,)),
                         ((4, 1), (5,)), ((1, 5), (1,))]:
        a, b = torch.randn(*shape), torch.randn(*other)
        assert_same(a.to(device) * b.to(device), a * b)
    x = torch.arange(6).reshape(2, 3)
    for other in (2, 2.5, True, torch.tensor(3), torch.tensor(1.5)):
        on_device = other.to(device) if isinstance(other, torch.Tensor) \
            else other
        assert_same(x.to(device) * on_device, x * other)
    t = torch.randn(4, 6)
    for view in (t, t.t(), t[:, ::2], t[1:]):
        assert_same(view.to(device).sum(1, keepdim=True),
                    view.sum(1, keepdim=True))
    # The default dtype decides a Python float's type.
    try:
        torch.set_default_dtype(torch.float64)
        assert (x.to(device) * 2.5).dtype == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    assert (x.to(device) * 2.5).dtype == torch.float32


# ------------------------------------------------------------------- stubs

def test_stub_entries_run_the_stub_loop_on_the_device(device):
    # abs.out (a plain at::native function) and sin.out (a structured
    # kernel class) reach abs_stub and sin_stub, whose device entries run
    # the CPU loops on the device memory.
    x = make((4, 5), torch.float32)
    for fn in (torch.abs, torch.sin):
        for _, v in layouts((4, 5), torch.float32):
            check(fn, [v], device)
        out = torch.empty(0, device=device)
        assert fn(x.to(device), out=out) is out
        assert_same(out, fn(x))
    d = x.to(device)
    d.sin_()
    assert_same(d, torch.sin(x))
    check(torch.abs, [make((6,), torch.int64)], device)


def test_stub_declared_in_any_aten_header(device):
    # addr_stub is declared in ATen/native/LinearAlgebra.h; the registration
    # file includes the header of each stub it registers.
    m, v1, v2 = make((3, 4), torch.float32), make((3,), torch.float32), make(
        (4,), torch.float32)
    out = torch.empty(0, device=device)
    got = torch.addr(m.to(device), v1.to(device), v2.to(device), beta=0.5,
                     alpha=2, out=out)
    assert got is out
    assert_same(out, torch.addr(m, v1, v2, beta=0.5, alpha=2))


def test_stub_loops_refuse_to_cast(device):
    # Note [Emulated stub entries do not cast]: sin of an int64 tensor
    # computes in float32, which the CPU loop cannot read the input as.
    with pytest.raises(RuntimeError, match="stub loop computes in Float but "
                       "an operand is Long"):
        torch.sin(torch.arange(4).to(device))


def test_the_same_memory_in_other_shapes_and_dtypes(device):
    # Note [Host storage reuse]: an alias that last held the same memory is
    # taken again and only what changed is set on it, so the same device
    # bytes seen with other sizes, strides, offsets or dtypes in turn must
    # each compute as on the CPU.
    x = make((64,), torch.float32, seed=1)
    y = make((64,), torch.float32, seed=2)
    dx, dy = x.to(device), y.to(device)
    views = [
        lambda t: t,
        lambda t: t.view(8, 8),
        lambda t: t.view(8, 8).t(),
        lambda t: t[:32],
        lambda t: t[::2],
        lambda t: t.view(torch.int32),
        lambda t: t,
    ]
    for _ in range(2):
        for view in views:
            expected = torch.mul(view(x), view(y))
            got = torch.mul(view(dx), view(dy))
            assert got.device.type == device
            torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_fill_over_every_layout(device, dtype):
    # The example's fill_ kernel stores a dense tensor's memory in one run
    # and walks any other layout element by element.
    value = True if dtype == torch.bool else 3
    layouts_of = {
        "contiguous": lambda t: t,
        "transposed": lambda t: t.transpose(0, 2),
        "channels_last": lambda t: t.contiguous(
            memory_format=torch.channels_last),
        "offset": lambda t: t[1:],
        "stepped": lambda t: t[:, ::2],
    }
    for name, layout in layouts_of.items():
        cpu = layout(torch.zeros(3, 4, 5, 6, dtype=dtype))
        dev = layout(torch.zeros(3, 4, 5, 6, dtype=dtype, device=device))
        cpu.fill_(value)
        dev.fill_(value)
        # The whole storage: a fill must not reach past its tensor's elements.
        whole_cpu = torch.tensor([], dtype=dtype).set_(cpu.untyped_storage())
        whole_dev = torch.tensor([], dtype=dtype, device=device).set_(
            dev.untyped_storage())
        assert torch.equal(whole_dev.cpu(), whole_cpu), name
