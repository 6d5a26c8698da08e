"""The runtime's checks: devices, streams, events, memory, RNG,
serialization, autograd, graphs, the profiler, compile and export,
distributed, and the libraries users train with. Each is one capability of
the report's matrix too (``_report/capabilities.py``)."""
from __future__ import annotations

import copy
import dataclasses
import gc
import importlib.util
import io
import time
from typing import Any, Callable, Optional

import pytest
import torch

from .cases import functional_of, overload_of
from .compare import _assert_same
from .suite import Suite, _call

# --------------------------------------------------------------------------
# The runtime


@dataclasses.dataclass(frozen=True)
class RuntimeCase:
    name: str
    marker: str
    check: Callable[[Suite], None]

    def __str__(self) -> str:
        return self.name


def check_devices(suite: Suite) -> None:
    m = suite.module
    assert m.is_available()
    count = m.device_count()
    assert count >= 1
    assert torch.accelerator.device_count() == count
    start = m.current_device()
    try:
        for index in range(count):
            m.set_device(index)
            assert m.current_device() == index
            t = torch.ones(2, device=suite.device)
            assert t.device.index == index, t.device
        m.set_device(0)
        with m.device(count - 1):
            assert m.current_device() == count - 1
        assert m.current_device() == 0
    finally:
        m.set_device(start)
    t = torch.ones(1, device=f"{suite.device}:{count - 1}")
    with m.device_of(t):
        assert m.current_device() == count - 1
    assert m.current_device() == start
    props = m.get_device_properties(0)
    assert props.name and m.get_device_name(0) == props.name


def check_invalid_index(suite: Suite) -> None:
    count = suite.module.device_count()
    for bad in (count, count + 7):
        with pytest.raises((RuntimeError, ValueError, AssertionError)) as info:
            torch.ones(1, device=f"{suite.device}:{bad}")
        assert str(bad) in str(info.value), str(info.value)
        with pytest.raises((RuntimeError, ValueError, AssertionError)):
            suite.module.set_device(bad)


def check_stream_ordering(suite: Suite) -> None:
    m = suite.module
    side = m.Stream()
    assert side != m.current_stream()
    assert m.current_stream() == m.default_stream()
    x = torch.randn(256, 256)
    a = x.to(suite.device)
    # Work on the side stream after the current stream's work, then back.
    side.wait_stream(m.current_stream())
    with m.stream(side):
        assert m.current_stream() == side
        b = a @ a + 1
        done = m.Event()
        done.record(side)
    m.current_stream().wait_event(done)
    b.record_stream(m.current_stream())
    got = (b * 2).cpu()
    torch.testing.assert_close(got, (x @ x + 1) * 2, rtol=1e-4, atol=1e-3)
    side.synchronize()
    assert side.query() and done.query()
    m.synchronize()


def check_events(suite: Suite) -> None:
    # Timed events bracket work the device certainly spends time on: their
    # elapsed time is more than zero (a driver whose timed events all report
    # 0 ms fails here) and no more than the host saw pass between recording
    # the first and the second having completed.
    m = suite.module
    x = torch.randn(256, 256, device=suite.device)
    m.synchronize()
    start = m.Event(enable_timing=True)
    end = m.Event(enable_timing=True)
    host_start = time.perf_counter()
    start.record()
    for _ in range(10):
        x = x @ x.tanh()
    end.record()
    end.synchronize()
    host_ms = (time.perf_counter() - host_start) * 1000.0
    assert start.query() and end.query()
    elapsed = start.elapsed_time(end)
    assert elapsed > 0.0, (
        f"timed events around ten 256x256 matmuls report {elapsed} ms")
    assert elapsed <= host_ms * 1.1 + 1.0, (
        f"timed events report {elapsed:.3f} ms for work the host saw take "
        f"{host_ms:.3f} ms")
    untimed = m.Event()
    untimed.record()
    untimed.synchronize()
    with pytest.raises((RuntimeError, ValueError)):
        untimed.elapsed_time(end)


def check_memory_statistics(suite: Suite) -> None:
    m = suite.module
    m.synchronize()
    m.reset_peak_memory_stats()
    before = m.memory_allocated()
    t = torch.empty(1 << 20, dtype=torch.uint8, device=suite.device)
    assert m.memory_allocated() >= before + (1 << 20)
    assert m.max_memory_allocated() >= m.memory_allocated()
    assert m.memory_reserved() >= m.memory_allocated()
    stats = m.memory_stats()
    assert stats["allocated_bytes.all.current"] == m.memory_allocated()
    del t
    assert m.memory_allocated() == before
    assert m.max_memory_allocated() >= before + (1 << 20)
    free, total = m.mem_get_info()
    assert 0 <= free <= total


def check_empty_cache(suite: Suite) -> None:
    m = suite.module
    m.synchronize()
    before = m.memory_reserved()
    t = torch.empty(8 << 20, dtype=torch.uint8, device=suite.device)
    assert m.memory_reserved() >= before + (8 << 20)
    del t
    m.synchronize()
    m.empty_cache()
    # Every unused cached block went back, the freed one with them.
    assert m.memory_reserved() <= before, (m.memory_reserved(), before)


def check_out_of_memory(suite: Suite) -> None:
    m = suite.module
    total = m.mem_get_info()[1]
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(total + (1 << 30), dtype=torch.uint8, device=suite.device)
    assert suite.device in str(info.value).lower() or "memory" in str(info.value)
    # The device still works.
    x = torch.arange(4.0, device=suite.device) * 2
    assert x.cpu().tolist() == [0.0, 2.0, 4.0, 6.0]


def check_pinned_memory(suite: Suite) -> None:
    host = torch.empty(1024, pin_memory=True)
    assert host.is_pinned()
    assert not torch.empty(8).is_pinned()
    host.copy_(torch.arange(1024.0))
    dev = host.to(suite.device, non_blocking=True)
    back = torch.empty(1024, pin_memory=True)
    back.copy_(dev, non_blocking=True)
    suite.module.synchronize()
    assert back.tolist() == host.tolist()
    assert torch.arange(3.0).pin_memory().is_pinned()


def check_rng(suite: Suite) -> None:
    m = suite.module
    m.manual_seed(42)
    a = torch.rand(100, device=suite.device)
    m.manual_seed(42)
    b = torch.rand(100, device=suite.device)
    assert torch.equal(a.cpu(), b.cpu()), "manual_seed does not repeat draws"
    assert m.initial_seed() == 42
    state = m.get_rng_state()
    c = torch.randn(50, device=suite.device)
    m.manual_seed(7)
    m.set_rng_state(state)
    d = torch.randn(50, device=suite.device)
    assert torch.equal(c.cpu(), d.cpu()), "set_rng_state does not restore"
    m.manual_seed(43)
    e = torch.rand(100, device=suite.device)
    assert not torch.equal(a.cpu(), e.cpu()), "two seeds give the same draws"
    generator = torch.Generator(device=suite.device).manual_seed(3)
    f = torch.rand(10, device=suite.device, generator=generator)
    generator.manual_seed(3)
    g = torch.rand(10, device=suite.device, generator=generator)
    assert torch.equal(f.cpu(), g.cpu())
    states = m.get_rng_state_all()
    assert len(states) == m.device_count()
    m.set_rng_state_all(states)
    torch.manual_seed(42)  # seeds the device too
    h = torch.rand(100, device=suite.device)
    assert torch.equal(h.cpu(), a.cpu())


def check_serialization(suite: Suite) -> None:
    src = {"w": torch.randn(3, 4), "n": torch.arange(5)}
    dev = {k: v.to(suite.device) for k, v in src.items()}
    buffer = io.BytesIO()
    torch.save(dev, buffer)
    for location, want in ((None, suite.device), ("cpu", "cpu"),
                           (torch.device(suite.device, 0), suite.device)):
        buffer.seek(0)
        loaded = torch.load(buffer, map_location=location)
        for k, v in src.items():
            assert loaded[k].device.type == want, (location, loaded[k].device)
            assert torch.equal(loaded[k].cpu(), v)
    if suite.module.device_count() > 1:
        buffer.seek(0)
        loaded = torch.load(buffer, map_location={f"{suite.device}:0":
                                                  f"{suite.device}:1"})
        assert loaded["w"].device.index == 1
    # A module's state dict, loaded back into a module on the device.
    model = torch.nn.Linear(4, 2).to(suite.device)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    copy = torch.nn.Linear(4, 2).to(suite.device)
    copy.load_state_dict(torch.load(buffer))
    assert torch.equal(copy.weight.cpu(), model.weight.cpu())


def check_accelerator(suite: Suite) -> None:
    acc = torch.accelerator
    assert acc.is_available()
    assert acc.current_accelerator().type == suite.device
    assert acc.device_count() == suite.module.device_count()
    start = acc.current_device_index()
    try:
        acc.set_device_index(acc.device_count() - 1)
        assert suite.module.current_device() == acc.device_count() - 1
    finally:
        acc.set_device_index(start)
    stream = acc.current_stream()
    assert stream.device.type == suite.device
    acc.synchronize()
    assert torch.device(suite.device).type == suite.device
    assert getattr(torch, suite.device) is suite.module


def check_fallback_policy(suite: Suite) -> None:
    """The global fallback of backend.yaml, on a function the spec leaves to
    it, and the functions the spec gives `kind: fallback`."""
    m = suite.module
    name = suite.unlisted_operator()
    assert name is not None, "every candidate function is registered"
    func = overload_of(name)
    a, b = torch.rand(4, 3) + 0.5, torch.rand(4, 3) + 0.5
    args = {"self": a, "other": b}
    before = m.fallback_counts()
    if suite.spec.FALLBACK == "error":
        with pytest.raises(NotImplementedError) as info:
            _call(func, args, suite.device, [a])
        assert f"aten::{name}" in str(info.value), str(info.value)
    else:
        got = _call(func, args, suite.device, [a])
        want = _call(func, args, "cpu", [a])
        _assert_same(got, want, suite.device, f"{name} through the fallback")
        after = m.fallback_counts().get(suite.spec.FALLBACK, {})
        count = after.get(f"aten::{name}", 0)
        assert count == before.get(suite.spec.FALLBACK, {}).get(
            f"aten::{name}", 0) + 1, after
    for name, kind, *_ in suite.spec.OPERATORS:
        if kind != "fallback":
            continue
        func = overload_of(name)
        inputs = suite.inputs(func, torch.float32)
        if not inputs:
            continue
        before = m.fallback_counts().get("cpu", {}).get(f"aten::{name}", 0)
        suite.compare(func, functional_of(func), inputs[0][1],
                      f"{name} (kind fallback)")
        after = m.fallback_counts().get("cpu", {}).get(f"aten::{name}", 0)
        assert after > before, f"{name} did not run through the CPU fallback"


def check_autocast_basics(suite: Suite) -> None:
    lower = getattr(torch, suite.spec.AUTOCAST_DTYPE)
    assert torch.amp.is_autocast_available(suite.device)
    with torch.autocast(suite.device, dtype=lower):
        assert torch.is_autocast_enabled(suite.device)
        assert torch.get_autocast_dtype(suite.device) == lower
    assert not torch.is_autocast_enabled(suite.device)
    assert lower in suite.module.get_amp_supported_dtype()


def check_compile(suite: Suite) -> None:
    def step(x, w):
        return torch.nn.functional.gelu(x @ w).sum(dim=-1) * 0.5

    compiled = torch.compile(step)
    x, w = torch.randn(8, 16), torch.randn(16, 4)
    got = compiled(x.to(suite.device), w.to(suite.device))
    _assert_same(got, step(x, w), suite.device, "torch.compile")
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 2))
    reference = model(x)
    device_model = torch.compile(model.to(suite.device))
    out = device_model(x.to(suite.device))
    torch.testing.assert_close(out.detach().cpu(), reference.detach(),
                               rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert model[0].weight.grad is not None


def check_distributed(suite: Suite) -> None:
    """A one-rank group on the device's own collectives backend, in a fresh
    interpreter (a process group is process state)."""
    r = suite.run_python("""
        import torch.distributed as dist
        store = dist.HashStore()
        dist.init_process_group(store=store, rank=0, world_size=1)
        assert dist.get_backend() != "gloo", dist.get_backend()
        x = torch.arange(6.0, device=DEVICE)
        dist.all_reduce(x)
        assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        dist.broadcast(x, 0)
        gathered = [torch.empty_like(x)]
        dist.all_gather(gathered, x)
        assert torch.equal(gathered[0].cpu(), x.cpu())
        model = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Linear(4, 2).to(DEVICE))
        model(torch.randn(3, 4, device=DEVICE)).sum().backward()
        dist.destroy_process_group()
        print("distributed ok")
    """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "distributed ok" in r.stdout


def check_autograd(suite: Suite) -> None:
    """A small network's loss and gradients on the device against the
    CPU's, and an optimizer step."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 3))
    x, target = torch.randn(5, 8), torch.tensor([0, 2, 1, 1, 0])
    device_model = copy.deepcopy(model).to(suite.device)
    losses = []
    for net, device in ((model, "cpu"), (device_model, suite.device)):
        loss = torch.nn.functional.cross_entropy(net(x.to(device)),
                                                 target.to(device))
        loss.backward()
        losses.append(loss.detach().cpu())
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-5)
    for want, got in zip(model.parameters(), device_model.parameters()):
        assert got.grad is not None and got.grad.device.type == suite.device
        torch.testing.assert_close(got.grad.cpu(), want.grad,
                                   rtol=1e-4, atol=1e-5)
    optimizer = torch.optim.SGD(device_model.parameters(), lr=0.1)
    before = device_model[0].weight.detach().cpu().clone()
    optimizer.step()
    assert not torch.equal(device_model[0].weight.detach().cpu(), before)


def check_memory_snapshot(suite: Suite) -> None:
    """The allocator's history and snapshot, as torch.cuda.memory's."""
    memory = suite.module.memory
    memory._record_memory_history()
    try:
        t = torch.empty(1 << 16, dtype=torch.uint8, device=suite.device)
        snapshot = memory._snapshot()
        del t
    finally:
        memory._record_memory_history(enabled=None)
    assert snapshot["segments"], "the snapshot has no segments"
    traces = [event for trace in snapshot["device_traces"] for event in trace]
    assert any(event["action"] == "alloc" and event["size"] >= 1 << 16
               for event in traces), "the history lacks the allocation"


def check_graphs(suite: Suite) -> None:
    """torch.accelerator.Graph: a capture replayed on new inputs."""
    side = torch.Stream(device=suite.device)
    side.wait_stream(torch.accelerator.current_stream())
    static_x = torch.zeros(16, 16, device=suite.device)
    weight = torch.randn(16, 16)
    device_weight = weight.to(suite.device)
    with side:
        graph = torch.accelerator.Graph()
        try:
            with graph:
                static_y = (static_x @ device_weight).relu()
        except RuntimeError as error:
            # The runtime's refusal when the driver has no stream capture
            # (runtime/src/Graph.cpp): the driver's choice, not a fault.
            if "does not implement stream capture" in str(error):
                pytest.skip(str(error).splitlines()[0])
            raise
    torch.accelerator.current_stream().wait_stream(side)
    x = torch.randn(16, 16)
    static_x.copy_(x.to(suite.device))
    graph.replay()
    suite.module.synchronize()
    torch.testing.assert_close(static_y.cpu(), (x @ weight).relu())


def check_profiler(suite: Suite) -> None:
    """torch.profiler sees the device's operators and memory."""
    activities = [torch.profiler.ProfilerActivity.CPU,
                  torch.profiler.ProfilerActivity.PrivateUse1]
    # The garbage of earlier checks, collected now rather than inside mm
    # (a free there counts against mm's memory), and work of theirs done.
    gc.collect()
    suite.module.synchronize()
    collecting = gc.isenabled()
    gc.disable()
    try:
        with torch.profiler.profile(activities=activities,
                                    profile_memory=True) as profile:
            x = torch.ones(64, 64, device=suite.device)
            y = x.mm(x)
            suite.module.synchronize()
    finally:
        if collecting:
            gc.enable()
    averages = {event.key: event for event in profile.key_averages()}
    assert "aten::mm" in averages, sorted(averages)
    assert averages["aten::mm"].self_device_memory_usage == y.nbytes


def check_safetensors(suite: Suite) -> None:
    """safetensors saves device tensors and loads them onto the device."""
    try:
        from safetensors.torch import load, save
    except ImportError:
        pytest.skip("safetensors is not installed")
    src = {"w": torch.randn(3, 4), "b": torch.arange(4.0)}
    loaded = load(save({k: v.to(suite.device) for k, v in src.items()}))
    for key, value in src.items():
        assert torch.equal(loaded[key].to(suite.device).cpu(), value)


def check_compile_aot_eager(suite: Suite) -> None:
    """torch.compile with the aot_eager backend (AOTAutograd's graphs, run
    eagerly on the device), forward and backward."""
    def step(x, w):
        return torch.nn.functional.silu(x @ w).sum()

    x, w = torch.randn(4, 8), torch.randn(8, 3, requires_grad=True)
    device_w = w.detach().to(suite.device).requires_grad_()
    got = torch.compile(step, backend="aot_eager")(x.to(suite.device), device_w)
    want = step(x, w)
    got.backward()
    want.backward()
    torch.testing.assert_close(got.detach().cpu(), want.detach(),
                               rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(device_w.grad.cpu(), w.grad,
                               rtol=1e-4, atol=1e-4)


def check_export(suite: Suite) -> None:
    """torch.export of a module on the device, and its program run there."""
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU())
    x = torch.randn(2, 6)
    want = model(x)
    device_model = model.to(suite.device)
    program = torch.export.export(device_model, (x.to(suite.device),))
    got = program.module()(x.to(suite.device))
    assert got.device.type == suite.device
    torch.testing.assert_close(got.detach().cpu(), want.detach(),
                               rtol=1e-5, atol=1e-5)


def check_fsdp_dtensor(suite: Suite) -> None:
    """FSDP2 (fully_shard) and a DTensor on a one-rank mesh of the device,
    in a fresh interpreter."""
    r = suite.run_python("""
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor import Shard, distribute_tensor
        dist.init_process_group(store=dist.HashStore(), rank=0, world_size=1)
        mesh = init_device_mesh(DEVICE, (1,))
        full = torch.arange(8.0).reshape(4, 2)
        sharded = distribute_tensor(full.to(DEVICE), mesh, [Shard(0)])
        assert torch.equal(sharded.full_tensor().cpu(), full)
        model = torch.nn.Linear(4, 2).to(DEVICE)
        fully_shard(model, mesh=mesh)
        model(torch.randn(3, 4, device=DEVICE)).sum().backward()
        assert model.weight.grad is not None
        dist.destroy_process_group()
        print("fsdp ok")
    """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "fsdp ok" in r.stdout


def _library_check(suite: Suite, library: str, code: str,
                   env: Optional[dict] = None) -> None:
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")
    r = suite.run_python(code, env=dict(env or {},
                                        TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert f"{library} ok" in r.stdout, r.stdout[-2000:]


def check_deepspeed(suite: Suite) -> None:
    """DeepSpeed selects the device's accelerator (the integrations adapter)
    and runs on it."""
    _library_check(suite, "deepspeed", """
        from deepspeed.accelerator import get_accelerator
        accelerator = get_accelerator()
        assert accelerator.device_name() == DEVICE, accelerator.device_name()
        assert accelerator.communication_backend_name() != "gloo"
        t = torch.ones(3, device=accelerator.device_name(0)) * 2
        accelerator.synchronize()
        assert t.sum().item() == 6
        print("deepspeed ok")
    """)


def check_lightning(suite: Suite) -> None:
    """A Lightning Trainer with accelerator=<device> fits a step on it."""
    _library_check(suite, "lightning", """
        import lightning as L
        class Module(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(4, 1)
            def training_step(self, batch, _):
                assert batch[0].device.type == DEVICE, batch[0].device
                return torch.nn.functional.mse_loss(self.layer(batch[0]), batch[1])
            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)
        data = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1)),
            batch_size=4)
        trainer = L.Trainer(accelerator=DEVICE, devices=1, max_steps=2,
                            logger=False, enable_checkpointing=False,
                            enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(Module(), data)
        assert trainer.global_step == 2
        print("lightning ok")
    """)


def check_accelerate(suite: Suite) -> None:
    """Hugging Face accelerate (what transformers.Trainer runs on) places a
    model and its batches on the device and steps it."""
    _library_check(suite, "accelerate", """
        from accelerate import Accelerator
        accelerator = Accelerator()
        assert accelerator.device.type == DEVICE, accelerator.device
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model, optimizer = accelerator.prepare(model, optimizer)
        x = torch.randn(8, 4, device=accelerator.device)
        loss = model(x).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        assert next(model.parameters()).device.type == DEVICE
        print("accelerate ok")
    """, env={"ACCELERATE_TORCH_DEVICE": suite.device})


def runtime_cases(spec: Any) -> list[RuntimeCase]:
    cases = [
        RuntimeCase("devices", "runtime", check_devices),
        RuntimeCase("invalid_device_index", "runtime", check_invalid_index),
        RuntimeCase("stream_ordering", "runtime", check_stream_ordering),
        RuntimeCase("events", "runtime", check_events),
        RuntimeCase("memory_statistics", "runtime", check_memory_statistics),
        RuntimeCase("empty_cache", "runtime", check_empty_cache),
        RuntimeCase("out_of_memory", "runtime", check_out_of_memory),
        RuntimeCase("rng", "runtime", check_rng),
        RuntimeCase("serialization", "runtime", check_serialization),
        RuntimeCase("accelerator", "runtime", check_accelerator),
        RuntimeCase("fallback_policy", "runtime", check_fallback_policy),
        RuntimeCase("autograd", "runtime", check_autograd),
        RuntimeCase("memory_snapshot", "runtime", check_memory_snapshot),
        RuntimeCase("graphs", "runtime", check_graphs),
        RuntimeCase("profiler", "runtime", check_profiler),
        RuntimeCase("safetensors", "runtime", check_safetensors),
        RuntimeCase("compile", "compile", check_compile),
        RuntimeCase("compile_aot_eager", "compile", check_compile_aot_eager),
        RuntimeCase("export", "compile", check_export),
        RuntimeCase("distributed", "distributed", check_distributed),
        RuntimeCase("fsdp_dtensor", "distributed", check_fsdp_dtensor),
        RuntimeCase("deepspeed", "integrations", check_deepspeed),
        RuntimeCase("lightning", "integrations", check_lightning),
        RuntimeCase("accelerate", "integrations", check_accelerate),
    ]
    if spec.FEATURES.get("pinned_memory"):
        cases.append(RuntimeCase("pinned_memory", "runtime", check_pinned_memory))
    if spec.FEATURES.get("autocast"):
        cases.append(RuntimeCase("autocast", "autocast", check_autocast_basics))
    return cases
