"""Device work does not make the host wait, as on CUDA (Note [Queued
operators] in runtime/src/emulate/Launch.cpp, Note [Asynchronous copies] in
runtime/src/Builtin.cpp).

Each test first holds the current stream with `_sleep` (a kernel that
occupies it without touching memory), so that what follows is queued behind
known work: the host must return long before the sleep ends, and the results
must be right once the stream is synchronized.
"""

import time

import pytest
import torch

# The stream is held this long; the host must return well within it.
HOLD_MS = 400
HOST_BUDGET_S = HOLD_MS / 1000 / 2


def _host_time(mod, fn):
    """Runs `fn` behind a held stream; returns (its result, host seconds)."""
    mod._sleep(HOLD_MS)
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


@pytest.fixture
def warm(device, mod):
    """Runs each operator the tests queue once on an idle stream: an
    operator computed through its out= overload is queued only once that
    overload kept the shapes it was given."""
    x = torch.arange(8.0, device=device)
    (x + 1).add_(1)
    (x * 2).sum()
    torch.mm(x.view(2, 4), x.view(4, 2))
    torch.gather(x, 0, torch.tensor([0, 1], device=device))
    torch.softmax(x, 0)
    mod.synchronize()
    return x


def test_operators_queue_behind_work_and_compute_right(device, mod, warm):
    x = warm
    a = torch.randn(64, 64, device=device)

    def work():
        y = x + 1  # a vendor kernel (add.out)
        y.add_(2)  # in place, checked by its shape function
        z = torch.softmax(y * 3, 0)  # through out= overloads
        m = a @ a  # through mm.out
        v = z.view(2, 4).t()  # a view: no place in the stream's order
        return y, z, m, v

    (y, z, m, v), host = _host_time(mod, work)
    assert host < HOST_BUDGET_S, f"the host waited {host:.3f} s"
    assert not mod.current_stream().query(), "the held stream was done early"
    mod.synchronize()
    xc, ac = x.cpu(), a.cpu()
    torch.testing.assert_close(y.cpu(), xc + 3)
    torch.testing.assert_close(z.cpu(), torch.softmax((xc + 3) * 3, 0))
    torch.testing.assert_close(m.cpu(), ac @ ac)
    torch.testing.assert_close(v.cpu(), z.cpu().view(2, 4).t())


def test_queued_kernels_outlive_the_tensors_python_drops(device, mod, warm):
    # The example's kernels own their operands as tensors that hold neither
    # Python's object nor the memory (accgen::runtime::ownedByLaunch) or
    # read them by pointer: the inputs may go before the queued kernels run,
    # and, as on CUDA, their blocks are free at once.
    a = torch.randn(4, 256, device=device)
    b = torch.randn(4, 256, device=device)
    ac, bc = a.cpu(), b.cpu()
    blocks = {a.data_ptr(), b.data_ptr()}

    def states():
        # By address: other tests' garbage may free memory meanwhile.
        return {block["address"]: block["state"]
                for segment in mod.memory_snapshot()
                for block in segment["blocks"] if block["address"] in blocks}

    assert set(states().values()) == {"active_allocated"}

    def work():
        nonlocal a, b
        s = a + b  # add.out: a TensorIterator the launch owns
        a.add_(b, alpha=2)  # in place on a tensor Python holds
        r = torch.relu(b)  # relu: pointers into a borrowed input
        q = torch.ops.accel.scaled_add(a, b, 0.5)
        t = torch.abs(b)  # abs_stub: a copy of its TensorIterator queued
        del a, b
        return s, r, q, t

    (s, r, q, t), host = _host_time(mod, work)
    assert host < HOST_BUDGET_S, f"the host waited {host:.3f} s"
    # Free while the kernels that read them are queued, and no other stream
    # holds them.
    assert set(states().values()) == {"inactive"}
    assert not mod.current_stream().query(), "the held stream was done early"
    # The dropped inputs' blocks, taken again from the cache: the stream
    # orders this fill after the kernels that read them.
    torch.full((4, 256), 7.0, device=device)
    torch.full((4, 256), 9.0, device=device)
    mod.synchronize()
    torch.testing.assert_close(s.cpu(), ac + bc)
    torch.testing.assert_close(r.cpu(), torch.relu(bc))
    torch.testing.assert_close(q.cpu(), (ac + 2 * bc) + 0.5 * bc)
    torch.testing.assert_close(t.cpu(), bc.abs())


def test_large_work_is_queued_on_an_idle_stream(device, mod):
    # More than 1 MiB of tensors: queued even on an idle stream.
    a = torch.randn(1024, 1024, device=device)
    torch.mm(a, a)
    mod.synchronize()
    start = time.perf_counter()
    outs = [torch.mm(a, a) for _ in range(10)]
    host = time.perf_counter() - start
    pending = not mod.current_stream().query()
    # Ten products take the device about 100 ms, queuing them takes the host
    # well under a millisecond: work is still pending after the loop.
    assert pending, f"all work done during the loop ({host:.3f} s on the host)"
    mod.synchronize()
    ref = a.cpu() @ a.cpu()
    torch.testing.assert_close(outs[-1].cpu(), ref)


def test_argument_errors_raise_at_the_call_even_when_queued(device, mod, warm):
    x = warm
    mod._sleep(HOLD_MS)
    with pytest.raises(RuntimeError, match="must match the size"):
        x.add_(torch.ones(3, device=device))
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.softmax(x, 0) * torch.ones(3, device=device)
    mod.synchronize()
    torch.testing.assert_close(x.cpu(), torch.arange(8.0))


def test_a_failing_queued_operator_raises_at_the_next_synchronization(
        device, mod, warm):
    x = warm
    bad = torch.tensor([0, 99], device=device)
    mod._sleep(HOLD_MS)
    torch.gather(x, 0, bad)  # data-dependent: known only when it runs
    with pytest.raises(RuntimeError) as raised:
        mod.synchronize()
    message = str(raised.value)
    assert "Work queued on the" in message
    assert "aten::gather" in message and "out of bounds" in message
    # Reported once; the device stays usable.
    mod.synchronize()
    torch.testing.assert_close((x + 1).cpu(), torch.arange(8.0) + 1)


def test_launch_blocking_makes_errors_raise_at_their_call(device, run_python):
    code = f"""
import torch
x = torch.arange(8.0, device="{device}")
torch.gather(x, 0, torch.tensor([0, 1], device="{device}"))
torch.{device}._sleep(200)
try:
    torch.gather(x, 0, torch.tensor([0, 99], device="{device}"))
except RuntimeError as e:
    print("raised at the call:", "out of bounds" in str(e))
torch.{device}.synchronize()
"""
    result = run_python(code, env={"ACCGEN_LAUNCH_BLOCKING": "1"})
    assert result.returncode == 0, result.stderr
    assert "raised at the call: True" in result.stdout


@pytest.mark.usefixtures("pinned_memory")
def test_pinned_copies_with_non_blocking_do_not_wait(device, mod):
    host = torch.randn(256, 256).pin_memory()
    d, seconds = _host_time(mod, lambda: host.to(device, non_blocking=True))
    assert seconds < HOST_BUDGET_S, f"the host waited {seconds:.3f} s"
    back = torch.empty(256, 256).pin_memory()
    _, seconds = _host_time(mod, lambda: back.copy_(d * 2, non_blocking=True))
    assert seconds < HOST_BUDGET_S, f"the host waited {seconds:.3f} s"
    mod.synchronize()
    torch.testing.assert_close(d.cpu(), host)
    torch.testing.assert_close(back, host * 2)


@pytest.mark.usefixtures("pinned_memory")
def test_blocking_copies_wait_for_queued_work(device, mod):
    host = torch.randn(256, 256)
    d = host.to(device)
    mod._sleep(HOLD_MS)
    y = d * 2
    start = time.perf_counter()
    out = y.cpu()  # a copy to pageable memory waits, as on CUDA
    waited = time.perf_counter() - start
    assert waited > HOLD_MS / 1000 / 4
    torch.testing.assert_close(out, host * 2)
    # A non_blocking copy from pageable memory consumes its source at once.
    src = torch.ones(16)
    mod._sleep(HOLD_MS)
    dst = src.to(device, non_blocking=True)
    src.fill_(5)
    torch.testing.assert_close(dst.cpu(), torch.ones(16))


def test_pinned_block_is_not_reused_before_its_copy_ran(device, mod,
                                                        pinned_memory):
    # The block of a pinned source freed right after a queued copy must not
    # serve the next pinned allocation before the copy read it.
    mod._sleep(HOLD_MS)
    src = torch.full((1024,), 7.0).pin_memory()
    d = src.to(device, non_blocking=True)
    del src
    other = torch.zeros(1024).pin_memory()
    other.fill_(-1)
    mod.synchronize()
    torch.testing.assert_close(d.cpu(), torch.full((1024,), 7.0))


def test_queued_work_keeps_grad_mode_and_autograd(device, mod, warm):
    w = torch.randn(8, 8, device=device, requires_grad=True)
    x = torch.randn(4, 8, device=device)
    mod._sleep(HOLD_MS)
    loss = torch.softmax(x @ w, 1).sum()
    loss.backward()
    mod.synchronize()
    wc = w.detach().cpu().requires_grad_()
    torch.softmax(x.cpu() @ wc, 1).sum().backward()
    torch.testing.assert_close(w.grad.cpu(), wc.grad)


def test_unlisted_operators_learn_their_shapes_and_queue(device, mod):
    # Note [Learned shapes]: searchsorted and native_batch_norm (which
    # writes its running statistics) are not structured, so the emulate
    # fallback that catches them has no shape function. The first call with
    # a key runs the CPU kernel and copies its results; the next runs the
    # out= overload into results allocated with the shapes it learned; from
    # then on such calls are queued behind the stream's work.
    torch.manual_seed(0)
    seq = torch.sort(torch.randn(100)).values
    q = torch.randn(10, 10)
    x = torch.randn(4, 3, 5, 5)
    weight, bias = torch.rand(3) + 0.5, torch.randn(3)
    mean, var = torch.zeros(3), torch.ones(3)
    dseq, dq, dx = seq.to(device), q.to(device), x.to(device)
    dweight, dbias = weight.to(device), bias.to(device)
    dmean, dvar = mean.to(device), var.to(device)

    def work(seq, q, x, weight, bias, mean, var):
        found = torch.searchsorted(seq, q, right=True)
        y, save_mean, save_invstd = torch.native_batch_norm(
            x, weight, bias, mean, var, True, 0.1, 1e-5)
        return found, y, save_mean, save_invstd

    for _ in range(2):
        work(dseq, dq, dx, dweight, dbias, dmean, dvar)
    mod.synchronize()
    before = mod.fallback_counts()["emulate"]

    out, host = _host_time(
        mod, lambda: work(dseq, dq, dx, dweight, dbias, dmean, dvar))
    assert host < HOST_BUDGET_S, f"the host waited {host:.3f} s"
    assert not mod.current_stream().query(), "the held stream was done early"
    mod.synchronize()
    after = mod.fallback_counts()["emulate"]
    for op in ("aten::searchsorted.Tensor", "aten::native_batch_norm"):
        assert after[op] == before[op] + 1, (op, before, after)

    ref = None
    for _ in range(3):  # the CPU's running statistics after three calls
        ref = work(seq, q, x, weight, bias, mean, var)
    for got, want in zip(out, ref):
        torch.testing.assert_close(got.cpu(), want)
        assert got.stride() == want.stride() and got.dtype == want.dtype
    torch.testing.assert_close(dmean.cpu(), mean)
    torch.testing.assert_close(dvar.cpu(), var)

    # Another key learns afresh: another dtype and shape of the values.
    q32 = torch.randn(7, dtype=torch.float64)
    for _ in range(3):
        got = torch.searchsorted(dseq.double(), q32.to(device), out_int32=True)
        torch.testing.assert_close(
            got.cpu(), torch.searchsorted(seq.double(), q32, out_int32=True))
        assert got.shape == (7,) and got.dtype == torch.int32


def test_functional_operators_without_shape_functions_learn_and_queue(
        device, mod):
    # Note [Learned shapes]: native_layer_norm (listed emulate) has no C++
    # shape function, and its only out= overload is the one torch generates,
    # which the engine does not take. A call that does not run at once (its
    # stream is busy) learns its shapes; a later call behind a busy stream
    # is queued: its CPU kernel, then copies into device results of those
    # shapes.
    torch.manual_seed(0)
    x = torch.randn(64, 32)
    w, b = torch.rand(32) + 0.5, torch.randn(32)
    dx, dw, db = x.to(device), w.to(device), b.to(device)

    def work(x, w, b):
        return torch.native_layer_norm(x, (32,), w, b, 1e-5)

    mod._sleep(50)
    work(dx, dw, db)  # waits for the stream, and learns
    work(dx, dw, db)  # at once, on the idle stream
    mod.synchronize()
    out, host = _host_time(mod, lambda: work(dx, dw, db))
    assert host < HOST_BUDGET_S, f"the host waited {host:.3f} s"
    assert not mod.current_stream().query(), "the held stream was done early"
    mod.synchronize()
    for got, want in zip(out, work(x, w, b)):
        torch.testing.assert_close(got.cpu(), want)
        assert got.stride() == want.stride() and got.dtype == want.dtype
    # An error of the queued kernel still raises at the next
    # synchronization: a key it has not learned runs at its call instead.
    with pytest.raises(RuntimeError, match="normalized_shape"):
        torch.native_layer_norm(dx, (31,), dw, db, 1e-5)


def _common_operators():
    """(name, f(tensors) -> result) for the operators a model's step uses,
    the hook operators (convolution, fused attention), factories, stubs,
    reductions and losses among them; `t` holds the arguments, on the
    device or the CPU alike."""
    import torch.nn.functional as F

    return {
        "add": lambda t: t["x"] + t["y"],
        "mul_": lambda t: t["x"].clone().mul_(2),
        "abs (stub)": lambda t: t["x"].abs(),
        "sin (stub)": lambda t: torch.sin(t["x"]),
        "abs out=": lambda t: torch.abs(t["x"], out=torch.empty_like(t["x"])),
        "relu": lambda t: torch.relu(t["x"]),
        "neg": lambda t: -t["x"],
        "exp": lambda t: t["x"].exp(),
        "clamp": lambda t: t["x"].clamp(-0.5, 0.5),
        "where": lambda t: torch.where(t["x"] > 0, t["x"], t["y"]),
        "gelu": lambda t: F.gelu(t["x"]),
        "sum": lambda t: t["x"].sum(),
        "sum dim": lambda t: t["x"].sum(1),
        "mean": lambda t: t["x"].mean(0),
        "amax": lambda t: t["x"].amax(1),
        "cumsum": lambda t: t["x"].cumsum(1),
        "norm": lambda t: t["x"].norm(),
        "linalg.vector_norm": lambda t: torch.linalg.vector_norm(t["x"], dim=1),
        "softmax": lambda t: torch.softmax(t["x"], 1),
        "log_softmax": lambda t: torch.log_softmax(t["x"], 1),
        "mse_loss": lambda t: F.mse_loss(t["x"], t["y"]),
        "cross_entropy": lambda t: F.cross_entropy(t["x"], t["labels"]),
        "mm": lambda t: t["x"] @ t["y"].t(),
        "linear": lambda t: F.linear(t["x"], t["y"], t["x"][0]),
        "bmm": lambda t: torch.bmm(t["q"][0], t["q"][0].transpose(1, 2)),
        "layer_norm": lambda t: F.layer_norm(t["x"], (16,)),
        "batch_norm (eval)": lambda t: F.batch_norm(
            t["image"], t["running"], t["running"] + 1, training=False),
        "conv2d": lambda t: F.conv2d(t["image"], t["weight"], padding=1),
        "max_pool2d": lambda t: F.max_pool2d(t["image"], 2),
        "scaled_dot_product_attention": lambda t: F.scaled_dot_product_attention(
            t["q"], t["q"], t["q"]),
        "zeros_like": lambda t: torch.zeros_like(t["x"]),
        "ones_like": lambda t: torch.ones_like(t["x"]),
        "full": lambda t: torch.full((16, 16), 2.5, device=t["x"].device),
        "zeros": lambda t: torch.zeros(16, 16, device=t["x"].device),
        "clone": lambda t: t["x"].clone(),
        "contiguous": lambda t: t["x"].t().contiguous(),
        "cat": lambda t: torch.cat([t["x"], t["y"]]),
        "index_select": lambda t: t["x"].index_select(0, t["labels"]),
        "embedding": lambda t: F.embedding(t["labels"], t["x"]),
        "conv2d backward": lambda t: torch.autograd.grad(
            F.conv2d(t["image"].requires_grad_(), t["weight"], padding=1).sum(),
            t["image"])[0],
        "attention backward": lambda t: torch.autograd.grad(
            F.scaled_dot_product_attention(
                t["q"].requires_grad_(), t["q"], t["q"]).sum(), t["q"])[0],
        "mse_loss backward": lambda t: torch.autograd.grad(
            F.mse_loss(t["x"].requires_grad_(), t["y"]), t["x"])[0],
    }


def _arguments(device):
    torch.manual_seed(0)
    cpu = {
        "x": torch.randn(16, 16), "y": torch.randn(16, 16),
        "labels": torch.randint(0, 16, (16,)),
        "image": torch.randn(2, 3, 8, 8), "weight": torch.randn(4, 3, 3, 3),
        "running": torch.zeros(3), "q": torch.randn(1, 2, 8, 4),
    }
    return {k: v.to(device) for k, v in cpu.items()}


# The operators of _common_operators() that still make the host wait: the
# in-place and out= forms the emulate fallback catches, without a shape
# function (Note [Queued operators]): zero_, which zeros_like and
# torch.zeros run, and linalg_vector_norm.out, which norm runs.
STILL_WAITING = {"zeros_like", "zeros", "norm", "linalg.vector_norm"}


def test_common_operators_queue_behind_work(device, mod):
    # Every other operator that need not read device data on the host
    # returns while the stream is still held, as on CUDA (Note [Queued
    # operators], Note [Queued hook operators] in runtime/src/HookOps.cpp),
    # and computes as the CPU does. Each runs twice on an idle stream first:
    # the first call with a key of its arguments may wait (it proves them).
    waited = []
    for name, op in _common_operators().items():
        for _ in range(2):
            op(_arguments(device))
        mod.synchronize()
        args = _arguments(device)
        mod._sleep(HOLD_MS)
        result = op(args)
        if mod.current_stream().query():
            waited.append(name)
        mod.synchronize()
        expected = op(_arguments("cpu"))
        torch.testing.assert_close(result.cpu(), expected, msg=name)
    assert set(waited) == STILL_WAITING, (
        f"these operators made the host wait: {sorted(set(waited) - STILL_WAITING)}; "
        f"these queue now (update STILL_WAITING): {sorted(STILL_WAITING - set(waited))}")
