"""The memory tools CUDA users reach for, on the device: the allocator's
history and snapshot (read by torch.cuda._memory_viz), memory_summary(), and
device memory in the profiler (Note [Memory history] in
runtime/src/Allocator.cpp)."""

import gc
import json
import pickle

import pytest
import torch
from torch.cuda import _memory_viz

MiB = 1 << 20

# The keys torch.cuda.memory._snapshot() gives each segment, block and
# trace entry (torch/cuda/memory.py documents them); _memory_viz reads them.
SEGMENT_KEYS = {"device", "address", "total_size", "allocated_size", "active_size",
                "requested_size", "stream", "segment_type", "segment_pool_id",
                "is_expandable", "frames", "blocks"}
BLOCK_KEYS = {"address", "size", "requested_size", "state", "frames"}
TRACE_KEYS = {"action", "addr", "size", "stream", "time_us", "frames"}


@pytest.fixture
def history(mod):
    gc.collect()
    mod.synchronize()
    mod.empty_cache()
    mod.memory._record_memory_history(max_entries=10_000)
    yield mod.memory
    mod.memory._record_memory_history(enabled=None)
    gc.collect()


def _make_activations(device):
    return torch.ones(3 * MiB // 4, device=device)  # 3 MiB, the large pool


def _names(frames):
    return [f["name"] for f in frames]


# --8<-- [start:memory-snapshot]
def test_snapshot_has_cuda_structure_and_stacks(device, mod, history):
    x = _make_activations(device)
    address = x.untyped_storage().data_ptr()
    snapshot = history._snapshot()
    assert set(snapshot) >= {"segments", "device_traces"}
    assert len(snapshot["device_traces"]) == mod.device_count()
    (segment,) = [s for s in snapshot["segments"] if s["address"] == address]
    assert set(segment) == SEGMENT_KEYS
    (block,) = segment["blocks"]
    assert set(block) == BLOCK_KEYS
    assert block["state"] == "active_allocated"
    assert block["requested_size"] == 3 * MiB
    assert segment["total_size"] >= 3 * MiB and segment["segment_type"] == "large"
    # Where it was allocated, innermost frame first.
    assert _names(block["frames"])[:2] == [
        "_make_activations", "test_snapshot_has_cuda_structure_and_stacks"]
    # The trace: the segment from the driver, the block handed out.
    trace = [e for e in snapshot["device_traces"][0] if e["addr"] == address]
    assert [e["action"] for e in trace] == ["segment_alloc", "alloc"]
    assert all(set(e) == TRACE_KEYS for e in trace)
    assert all(e["size"] == segment["total_size"] for e in trace)
    # Freed: requested and completed, with the stack of the free.
    del x
    events = [e for e in history._snapshot()["device_traces"][0]
              if e["addr"] == address]
    assert [e["action"] for e in events][2:] == ["free_requested", "free_completed"]
    assert "test_snapshot_has_cuda_structure_and_stacks" in _names(events[2]["frames"])
    mod.empty_cache()
    last = [e for e in history._snapshot()["device_traces"][0]
            if e["addr"] == address][-1]
    assert last["action"] == "segment_free"
# --8<-- [end:memory-snapshot]


def test_memory_viz_reads_the_snapshot(device, history, tmp_path):
    x = _make_activations(device)
    y = torch.zeros(1000, device=device)
    del y
    path = tmp_path / "snapshot.pickle"
    history._dump_snapshot(str(path))
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    raw = {"format_flamegraph": lambda lines: lines}
    # Flame graph lines: stream;segment;state;frames size.
    segments = _memory_viz.segments(snapshot, **raw)
    assert f"seg_{x.untyped_storage().data_ptr()};active_allocated;" in segments
    assert "_make_activations" in segments and f" {3 * MiB}\n" in segments
    memory = _memory_viz.memory(snapshot, **raw)
    assert "stream_0;active_allocated;" in memory and "_make_activations" in memory
    summary = _memory_viz.segsum(snapshot)
    assert f"segments: {len(snapshot['segments'])}" in summary
    trace = _memory_viz.trace(snapshot)
    assert "Device 0" in trace and "del " in trace and "free completed" in trace
    # And the HTML viewer, with the snapshot embedded.
    assert "Active Memory Timeline" in _memory_viz.trace_plot(snapshot)


def test_history_without_stacks_and_bounded(device, mod):
    mod.memory._record_memory_history(context=None, max_entries=3)
    try:
        tensors = [torch.empty(1024, device=device) for _ in range(5)]
        trace = mod.memory._snapshot()["device_traces"][0]
        assert len(trace) == 3  # the oldest dropped first
        assert all(e["frames"] == [] for e in trace)
        assert trace[-1]["addr"] == tensors[-1].untyped_storage().data_ptr()
    finally:
        mod.memory._record_memory_history(enabled=None)
    # Off: nothing recorded and the trace forgotten.
    torch.empty(1024, device=device)
    assert mod.memory._snapshot()["device_traces"][0] == []
    with pytest.raises(ValueError, match="enabled must be"):
        mod.memory._record_memory_history(enabled="yes")


def test_out_of_memory_is_in_the_trace(device, mod, history):
    total = mod.get_device_properties().total_memory
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(total + MiB, dtype=torch.uint8, device=device)
    (oom,) = [e for e in history._snapshot()["device_traces"][0] if e["action"] == "oom"]
    assert oom["size"] >= total + MiB
    assert 0 <= oom["device_free"] <= total
    assert "test_out_of_memory_is_in_the_trace" in _names(oom["frames"])


# --8<-- [start:memory-summary]
def test_memory_summary_reports_the_statistics(device, mod):
    gc.collect()
    mod.empty_cache()
    mod.reset_peak_memory_stats()
    x = torch.empty(5 * MiB, dtype=torch.uint8, device=device)
    text = mod.memory_summary()
    assert f"PyTorch {device} memory summary, device ID 0" in text
    stats = mod.memory_stats()
    row = next(line for line in text.splitlines() if line.startswith("| Allocated memory"))
    current = stats["allocated_bytes.all.current"]
    assert f"{current // MiB:6d} MiB" in row.split("|")[2]
    assert "from small pool" in text
    assert "from small pool" not in mod.memory_summary(abbreviated=True)
    assert mod.memory.memory_summary(0) == text
    del x
# --8<-- [end:memory-summary]


# --8<-- [start:profiler-memory]
def test_profiler_records_device_memory(device, tmp_path):
    activities = [torch.profiler.ProfilerActivity.CPU,
                  torch.profiler.ProfilerActivity.PrivateUse1]
    with torch.profiler.profile(activities=activities, profile_memory=True) as prof:
        x = torch.ones(256, 256, device=device)  # 256 KiB
        y = x.mm(x)
        del x
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["aten::mm"].self_device_memory_usage == 256 * 1024
    assert averages["aten::empty"].self_device_memory_usage >= 256 * 1024
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    memory = [e for e in events if e.get("name") == "[memory]"]
    device_events = [e for e in memory
                     if e["args"].get("Device Type") == int(torch._C._autograd.DeviceType.PrivateUse1)]
    sizes = sorted(e["args"]["Bytes"] for e in device_events)
    assert sizes[0] < 0 < sizes[-1]  # allocations and frees
    assert all(e["args"]["Total Allocated"] >= 0 for e in device_events)
    del y
# --8<-- [end:profiler-memory]
