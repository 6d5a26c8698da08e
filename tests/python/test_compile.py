"""torch.compile on the device: Inductor compiles device graphs with its C++
code generation, and each compiled kernel runs as device work on the
current stream (Note [Compiled kernels on the device] in
runtime/python/Module.cpp). Every result is compared with eager on the
device and with the CPU.

The suite runs with the access guard on (conftest): a compiled kernel that
touched device memory outside its launch would crash the run.
"""
import concurrent.futures
import ctypes
import importlib.util
import pathlib
import threading
import time

import pytest
import torch
import torch._dynamo
from torch import nn
from torch._inductor.utils import run_and_get_code

_MODELS = pathlib.Path(__file__).resolve().parents[2] / "bench" / "models.py"
_spec = importlib.util.spec_from_file_location("accgen_bench_models", _MODELS)
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32),
                         nn.Linear(32, 4))


def _close(actual, expected, **tol):
    torch.testing.assert_close(actual.cpu(), expected.cpu(), **tol)


def test_forward_runs_compiled_kernels_on_the_device(device):
    torch.manual_seed(0)
    model = _mlp()
    x = torch.randn(8, 16)
    expected = model(x)
    dev_model = _mlp().to(device)
    dev_model.load_state_dict(model.state_dict())
    dev_x = x.to(device)
    eager = dev_model(dev_x)
    compiled, codes = run_and_get_code(torch.compile(dev_model), dev_x)
    assert compiled.device.type == device
    _close(compiled, eager, atol=1e-5, rtol=1e-5)
    _close(compiled, expected, atol=1e-5, rtol=1e-5)
    code = "\n".join(codes)
    # Fused C++ kernels, each launched on the device, and the matmuls as
    # extern calls of the device's own operators.
    assert "cpp_fused" in code
    assert "_launch_compiled as _device_launch" in code
    assert "_device_launch(cpp_fused" in code
    # Buffers from the device's allocator, without a dispatcher call.
    assert "= _device_empty_strided((" in code
    assert "extern_kernels" in code


def test_registered_with_dynamo_and_inductor(device, mod):
    from torch._dynamo.device_interface import get_interface_for_device
    from torch._inductor.codegen.common import (
        get_device_op_overrides,
        get_scheduling_for_device,
    )
    from torch._inductor.codegen.cpp import CppScheduling

    interface = get_interface_for_device(device)
    assert interface.device_count() == mod.device_count()
    assert interface.Worker.current_device() == mod.current_device()
    assert issubclass(interface.Stream, torch.Stream)
    assert interface.current_stream() == mod.current_stream()
    torch.compile(lambda t: t + 1)(torch.ones(2, device=device))
    assert get_scheduling_for_device(device) is CppScheduling
    assert get_device_op_overrides(device).synchronize() == f"torch.{device}.synchronize()"


def test_import_does_not_load_the_compiler(device, mod, run_python):
    # Note [Registering with torch.compile lazily]: the registration waits
    # for Dynamo and Inductor to load.
    r = run_python(f"""
import sys, torch, {mod.__name__}
print(sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules))
from torch._dynamo.device_interface import get_interface_for_device
print(get_interface_for_device("{device}").device_count())
""")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:2] == ["[]", str(mod.device_count())]


def test_factory_calls_inside_the_graph(device):
    @torch.compile
    def f(x):
        return x + torch.ones(4, device=device) * 2

    x = torch.arange(4.0, device=device)
    _close(f(x), torch.arange(4.0) + 2)


def test_training_step_matches_eager_and_cpu(device):
    torch.manual_seed(0)
    cpu_model = _mlp()
    dev_model = _mlp().to(device)
    dev_model.load_state_dict(cpu_model.state_dict())
    batches = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(2)]

    def train(model, compile_step, device_type):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

        def step(x, y):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.detach()

        run = torch.compile(step) if compile_step else step
        return [run(x.to(device_type), y.to(device_type)) for x, y in batches]

    cpu_losses = train(cpu_model, False, "cpu")
    dev_losses = train(dev_model, True, device)
    for d, c in zip(dev_losses, cpu_losses):
        _close(d, c, atol=1e-5, rtol=1e-5)
    for (name, p), q in zip(dev_model.named_parameters(), cpu_model.parameters()):
        assert p.device.type == device, name
        _close(p, q, atol=1e-5, rtol=1e-5)


def test_dynamic_shapes_and_recompilation(device):
    def f(x):
        return torch.softmax(x * 2, dim=-1).sum(0)

    dynamic = torch.compile(f, dynamic=True)
    for rows in (3, 5, 9):
        x = torch.randn(rows, 7)
        _close(dynamic(x.to(device)), f(x), atol=1e-6, rtol=1e-5)

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    static = torch.compile(f, dynamic=False)
    for shape in ((4, 6), (5, 8)):
        x = torch.randn(shape)
        _close(static(x.to(device)), f(x), atol=1e-6, rtol=1e-5)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 2


def test_autocast_inside_the_compiled_region(device):
    def f(a, b):
        with torch.autocast(device, dtype=torch.bfloat16):
            return torch.relu(a @ b)

    a, b = torch.randn(8, 16), torch.randn(16, 8)
    compiled = torch.compile(f)(a.to(device), b.to(device))
    eager = f(a.to(device), b.to(device))
    assert compiled.dtype == eager.dtype == torch.bfloat16
    _close(compiled, eager, atol=0, rtol=0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _close(compiled, torch.relu(a @ b), atol=1e-2, rtol=1e-2)


def test_graph_breaks(device):
    def f(x):
        y = torch.sin(x) + 1
        torch._dynamo.graph_break()
        return torch.cos(y) * 2

    explanation = torch._dynamo.explain(f)(torch.randn(5, device=device))
    assert explanation.graph_break_count == 1
    x = torch.randn(5)
    _close(torch.compile(f)(x.to(device)), f(x), atol=1e-6, rtol=1e-6)


def test_custom_operator_through_its_meta_kernel(device, scaled_add):
    def f(a, b):
        return scaled_add(a.relu(), b, 0.5) * 3

    a, b = torch.randn(6), torch.randn(6)
    compiled = torch.compile(f, fullgraph=True)(a.to(device), b.to(device))
    _close(compiled, (a.relu() + 0.5 * b) * 3, atol=1e-6, rtol=1e-6)


def test_random_operators_draw_what_eager_draws(device):
    def f(x):
        return nn.functional.dropout(x, 0.5, training=True) + torch.rand_like(x)

    x = torch.ones(64, device=device)
    torch.manual_seed(7)
    eager = f(x)
    torch.manual_seed(7)
    compiled = torch.compile(f)(x)
    _close(compiled, eager, atol=0, rtol=0)


@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_models_train_compiled(device, name):
    case, dev_model, batches = models.twins(name, "small", device, 2)
    cpu_losses = models.train(case, case.model, batches, "cpu")
    dev_losses = models.train(case, dev_model, batches, device,
                              forward=torch.compile(dev_model))
    tol = dict(atol=case.atol, rtol=case.rtol)
    for d, c in zip(dev_losses, cpu_losses):
        assert d.device.type == device
        _close(d, c, **tol)
    for p, q in zip(dev_model.parameters(), case.model.parameters()):
        _close(p, q, **tol)


def test_compiled_kernels_follow_queued_work_on_the_stream(device, mod):
    # A device copy queued behind a sleeping kernel: a compiled kernel that
    # did not wait for the stream would read the old values.
    compiled = torch.compile(lambda t: t * 2 + 1)
    src = torch.full((1024,), 3.0, device=device)
    dst = torch.zeros(1024, device=device)
    compiled(dst)  # compiled before the timed part
    mod._sleep(100)
    dst.copy_(src, non_blocking=True)
    out = compiled(dst)
    _close(out, torch.full((1024,), 7.0))


def test_a_launch_runs_in_stream_order_and_raises_what_the_kernel_raises(device, mod):
    # _launch_compiled takes any callable as the kernel. Here it reads device
    # memory itself, which the access guard allows only inside the launch.
    launch = mod._C._launch_compiled
    dst = torch.zeros(4, device=device)
    seen = []

    def kernel(t, scale):
        value = ctypes.c_float.from_address(t.data_ptr()).value
        seen.append((threading.get_ident(), value * scale))

    launch(kernel, dst, 2)  # an idle stream: it runs here, at once
    assert seen == [(threading.get_ident(), 0.0)]
    mod._sleep(50)
    dst.copy_(torch.full((4,), 3.0, device=device), non_blocking=True)
    launch(kernel, dst, 2)  # after the sleep and the copy queued before it
    assert seen[1][1] == 6.0

    def failing(t):
        raise ValueError("raised by the kernel")

    with pytest.raises(ValueError, match="raised by the kernel"):
        launch(failing, dst)
    mod._sleep(20)
    with pytest.raises(ValueError, match="raised by the kernel"):
        launch(failing, dst)  # run behind queued work, GIL taken back
    mod.synchronize()  # nothing left sticky
    with pytest.raises(RuntimeError, match="no kernel given"):
        launch()


def test_a_compiled_kernel_refuses_a_storage_shrunk_since_compilation(device, mod):
    # Note [Device misuse]: as an eager call does, before the kernel reads
    # memory past the storage (it returned garbage, even under the guard).
    fn = torch.compile(lambda t: t * 2 + 1)
    x = torch.arange(64.0, device=device)
    _close(fn(x), torch.arange(64.0) * 2 + 1)
    x.untyped_storage().resize_(8)
    with pytest.raises(RuntimeError, match="needs a storage of 256 bytes; its storage holds 8"):
        fn(x)
    with pytest.raises(RuntimeError, match="needs a storage of 256 bytes"):
        x * 2  # the eager call raises the same
    # The launch itself checks, before the kernel runs.
    ran = []
    with pytest.raises(RuntimeError, match="needs a storage of 256 bytes"):
        mod._C._launch_compiled(lambda t: ran.append(t), x)
    assert ran == []


def test_buffers_come_from_the_device_allocator(device, mod):
    empty = mod._C._empty_strided
    t = empty((2, 3), (1, 2), torch.float16, 0)
    assert (t.shape, t.stride(), t.dtype, t.device) == (
        (2, 3), (1, 2), torch.float16, torch.device(device, 0))
    with pytest.raises(RuntimeError, match="2 sizes but 1 strides"):
        empty((2, 3), (1,), torch.float32, 0)
    with pytest.raises(RuntimeError, match=r"_empty_strided\(size: tuple"):
        empty([2], (1,), torch.float32, 0)


def test_the_gil_is_released_while_the_device_works(device, mod):
    compiled = torch.compile(lambda t: t.exp() + 1)
    x = torch.randn(256, device=device)
    compiled(x)
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    try:
        time.sleep(0.01)
        mod._sleep(300)
        before = len(ticks)
        out = compiled(x)
        during = len(ticks) - before
    finally:
        stop.set()
        thread.join()
    _close(out, x.cpu().exp() + 1)
    # 300 ms of device work at a tick per millisecond: the other thread ran.
    assert during > 50


@pytest.mark.parametrize("how", ["reduce-overhead", "cpp_wrapper", "aoti"])
def test_unsupported_modes_raise_one_clear_error(device, how):
    model = nn.Linear(4, 4).to(device)
    x = torch.randn(2, 4, device=device)
    expected = {"reduce-overhead": "CUDA graphs", "cpp_wrapper": "cpp_wrapper",
                "aoti": "AOTInductor"}[how]
    with pytest.raises(Exception) as info:
        if how == "aoti":
            exported = torch.export.export(model, (x,))
            torch._inductor.aoti_compile_and_package(exported)
        elif how == "cpp_wrapper":
            torch.compile(model, options={"cpp_wrapper": True})(x)
        else:
            torch.compile(model, mode=how)(x)
    message = str(info.value)
    assert f"is not supported on the {device} device" in message
    assert expected in message


def test_export_runs_on_the_device(device):
    torch.manual_seed(0)
    model = _mlp().to(device)
    x = torch.randn(8, 16, device=device)
    exported = torch.export.export(model, (x,))
    assert any(isinstance(v, torch.Tensor) and v.device.type == device
               for v in exported.state_dict.values())
    out = exported.module()(x)
    assert out.device.type == device
    _close(out, model(x), atol=0, rtol=0)


# What each workaround of Note [Inductor on a PrivateUse1 device]
# (runtime/python/_compile.py) keeps from failing: a graph that
# compiles with all of them and fails with the one left out, on the torch
# this runs on (each release of the matrix, scripts/test_releases.sh).
_WORKAROUND_CASES = {
    # An embedding's indirect indexing in a C++ kernel.
    "_device_generates_cpp": """
inputs = torch.randn(10, 4), torch.tensor([[1, 7, 3]])
def run(w, i):
    return torch.compile(lambda w, i: nn.functional.embedding(i, w) * 2)(w, i)
""",
    # The fused pointwise and reduction kernels of a softmax's backward.
    "_device_nodes_schedule_as_cpu": """
inputs = (torch.randn(8, 32),)
def run(x):
    x = x.detach().requires_grad_()
    (torch.compile(lambda t: torch.softmax(t, -1))(x)[:, 0] * 3).sum().backward()
    return x.grad
""",
}


@pytest.mark.parametrize("left_out", sorted(_WORKAROUND_CASES))
def test_torch_workarounds_are_still_needed(device, mod, run_python, left_out):
    compile_module = importlib.import_module(f"{mod.__name__}._compile")
    if getattr(compile_module, left_out) not in compile_module.needed_workarounds():
        pytest.skip(f"torch {torch.__version__} does not need {left_out}")
    code = f"""
import torch
from torch import nn
import {mod.__name__}._compile as c
if LEAVE_OUT:
    del c.TORCH_WORKAROUNDS[c.{left_out}]
{_WORKAROUND_CASES[left_out]}
expected = run(*inputs)
torch.testing.assert_close(run(*(t.to("{device}") for t in inputs)).cpu(), expected)
print("compiled")
"""
    # Inductor's on-disk caches would hand back the kernels compiled with
    # every workaround in place.
    env = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}
    # Both interpreters at once: each spends most of its time importing
    # torch and compiling, on one core.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        with_all, without = pool.map(
            lambda leave_out: run_python(code.replace("LEAVE_OUT", leave_out), env),
            ("False", "True"))
    assert with_all.returncode == 0, with_all.stderr[-3000:]
    assert "compiled" in with_all.stdout
    assert without.returncode != 0, (
        f"{left_out} is no longer needed on torch {torch.__version__}: map it "
        "to this release in TORCH_WORKAROUNDS")
    assert "InductorError" in without.stderr, without.stderr[-3000:]
