"""The runtime's checks: devices, streams, events, memory, RNG,
serialization, compile and distributed."""
from __future__ import annotations

import dataclasses
import io
import time
from typing import Any, Callable

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
        RuntimeCase("compile", "compile", check_compile),
        RuntimeCase("distributed", "distributed", check_distributed),
    ]
    if spec.FEATURES.get("pinned_memory"):
        cases.append(RuntimeCase("pinned_memory", "runtime", check_pinned_memory))
    if spec.FEATURES.get("autocast"):
        cases.append(RuntimeCase("autocast", "autocast", check_autocast_basics))
    return cases
