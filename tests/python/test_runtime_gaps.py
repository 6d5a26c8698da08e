"""Runtime behaviour beyond the operators: Tensor.record_stream under
work in flight on two streams, named tensors, numpy round trips through
torch.save/torch.load, and device time in the profilers and event timing."""

import io

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

# Long enough that the checks made while it runs finish well before it.
_IN_FLIGHT_MS = 1000


# ------------------------------------------------------------ record_stream


def test_sleep_keeps_the_stream_busy(mod):
    stream = mod.Stream()
    with mod.stream(stream):
        mod._sleep(_IN_FLIGHT_MS)
    assert not stream.query()
    stream.synchronize()
    assert stream.query()


def test_record_stream_defers_reuse_until_the_stream_completes(device, mod):
    host = torch.randn(1024, 256)
    source = host.to(device)
    pointer = source.data_ptr()
    side = mod.Stream()
    side.wait_stream(mod.current_stream())
    with mod.stream(side):
        mod._sleep(_IN_FLIGHT_MS)
        # A device copy is queued, not waited for: it reads `source` once
        # the sleep ran. (An emulated operator would wait for it.)
        copied = torch.empty_like(source)
        copied.copy_(source)
    source.record_stream(side)
    del source  # freed on the main stream while the side stream needs it

    replacement = torch.empty(1024, 256, device=device)
    assert not side.query(), "the side stream finished too early to check"
    assert replacement.data_ptr() != pointer
    side.synchronize()
    torch.testing.assert_close(copied.cpu(), host)
    # Once the side stream's work completed, the block is cached again.
    again = torch.empty(1024, 256, device=device)
    assert again.data_ptr() == pointer
    assert replacement.data_ptr() != again.data_ptr()


def test_without_record_stream_the_block_is_reused_at_once(device, mod):
    # The contrast: the allocator only knows what record_stream told it.
    source = torch.empty(1024, 256, device=device)
    pointer = source.data_ptr()
    del source
    assert torch.empty(1024, 256, device=device).data_ptr() == pointer


def test_record_stream_on_the_allocation_stream_changes_nothing(device, mod):
    source = torch.ones(64, device=device)
    pointer = source.data_ptr()
    source.record_stream(mod.current_stream())
    del source
    assert torch.empty(64, device=device).data_ptr() == pointer


def test_record_stream_refuses_a_stream_of_another_device_type(device):
    source = torch.ones(4, device=device)
    with pytest.raises(RuntimeError, match="record_stream expects a stream"):
        source.record_stream(torch.Stream(device="cpu"))


# ------------------------------------------------------------- named tensors


def test_empty_with_names_behaves_as_on_cpu(device):
    # Torch 2.13 has no named tensors: aten::empty.names and Tensor.names
    # are gone, and torch.empty refuses `names` for every device alike.
    assert not hasattr(torch.Tensor, "names")
    errors = []
    for where in ("cpu", device):
        with pytest.raises(TypeError) as error:
            torch.empty((2, 3), names=("N", "C"), device=where)
        errors.append(str(error.value))
    assert errors[0] == errors[1]


# --------------------------------------------------------------------- numpy


def test_numpy_of_a_device_tensor_asks_for_cpu(device):
    tensor = torch.ones(3, device=device)
    with pytest.raises(TypeError, match=r"Use Tensor\.cpu\(\) to copy"):
        tensor.numpy()
    with pytest.raises(TypeError, match=r"Use Tensor\.cpu\(\) to copy"):
        np.asarray(tensor)


def test_numpy_round_trip_through_save_and_load(device):
    host = torch.randn(4, 5)
    tensor = host.to(device)
    buffer = io.BytesIO()
    torch.save({"t": tensor, "n": tensor.cpu().numpy()}, buffer)

    buffer.seek(0)
    # numpy arrays need weights_only=False, on the device as on the CPU.
    loaded = torch.load(buffer, weights_only=False)
    assert loaded["t"].device == tensor.device
    torch.testing.assert_close(loaded["t"].cpu(), host)
    assert isinstance(loaded["n"], np.ndarray)
    np.testing.assert_array_equal(loaded["n"], host.numpy())

    buffer.seek(0)
    on_cpu = torch.load(buffer, map_location="cpu", weights_only=False)
    assert on_cpu["t"].device.type == "cpu"
    torch.testing.assert_close(on_cpu["t"], host)
    np.testing.assert_array_equal(on_cpu["n"], host.numpy())

    back = torch.from_numpy(loaded["n"]).to(device)
    assert back.device == tensor.device
    torch.testing.assert_close(back.cpu(), host)
    np.testing.assert_array_equal(back.cpu().numpy(), host.numpy())


@pytest.mark.parametrize(
    "dtype", [np.float64, np.float32, np.float16, np.int64, np.int8, np.bool_]
)
def test_from_numpy_to_the_device_and_back(device, dtype):
    array = (np.arange(24).reshape(2, 3, 4) % 3).astype(dtype)
    for view in (array, array.transpose(2, 0, 1), array[:, ::2]):
        tensor = torch.from_numpy(np.ascontiguousarray(view)).to(device)
        assert tensor.dtype == torch.from_numpy(array).dtype
        np.testing.assert_array_equal(tensor.cpu().numpy(), view)


def test_load_with_weights_only_refuses_numpy_as_on_cpu(device):
    # The same refusal for a device checkpoint as for a CPU one.
    messages = []
    for where in ("cpu", device):
        buffer = io.BytesIO()
        tensor = torch.ones(2, device=where)
        torch.save({"t": tensor, "n": tensor.cpu().numpy()}, buffer)
        buffer.seek(0)
        with pytest.raises(Exception) as error:
            torch.load(buffer)
        messages.append(type(error.value))
    assert messages[0] is messages[1]


# ------------------------------------------------------------------ profiling


def test_event_elapsed_time_is_non_negative(device, mod):
    a = torch.randn(128, 128, device=device)
    for make in (
        lambda: torch.Event(device=device, enable_timing=True),
        lambda: mod.Event(enable_timing=True),
    ):
        start, end = make(), make()
        start.record()
        a @ a
        end.record()
        end.synchronize()
        assert start.elapsed_time(end) >= 0.0
        # Back to back, with nothing between them.
        end.record()
        start.record()
        start.synchronize()
        assert end.elapsed_time(start) >= 0.0


def test_event_elapsed_time_measures_the_stream(mod):
    start = mod.Event(enable_timing=True)
    end = mod.Event(enable_timing=True)
    start.record()
    mod._sleep(50)
    end.record()
    end.synchronize()
    assert 50.0 <= start.elapsed_time(end) < 5000.0


def _device_times(events, name):
    matches = [event for event in events if event.key == name]
    assert matches, f"no {name} among {[event.key for event in events]}"
    return matches[0]


def test_profiler_reports_device_time(device):
    # An operator's device interval runs from the stream reaching its start
    # to its end, so it includes the host's time between the two while the
    # stream idles (Note [Profiling device time]): matmul's own interval is
    # the dispatch around mm. A matmul large enough that mm's kernel
    # dominates it even on a loaded machine (another test worker building a
    # backend on the other core).
    a = torch.randn(1024, 1024, device=device)
    torch.accelerator.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        b = a @ a
        c = b + b
        c.cpu()
    events = prof.key_averages()
    mm = _device_times(events, "aten::mm")
    assert mm.device_time_total > 0
    assert mm.self_device_time_total > 0
    # matmul calls mm: mm's device time is in its total, not in its own.
    matmul = _device_times(events, "aten::matmul")
    assert matmul.device_time_total >= mm.device_time_total
    assert matmul.self_device_time_total < mm.self_device_time_total
    # add runs its kernel itself, around the operators it calls.
    assert _device_times(events, "aten::add").self_device_time_total > 0
    # The device's activity, linked to the operator, as CUDA's kernels.
    kernel = _device_times(events, f"{device}: aten::mm")
    assert kernel.device_type == torch.autograd.DeviceType.PrivateUse1
    assert kernel.self_device_time_total == pytest.approx(mm.self_device_time_total)
    assert all(event.device_time_total >= 0 for event in events)
    # Nested operators' device time is counted once.
    total = sum(
        event.self_device_time_total
        for event in events
        if event.device_type == torch.autograd.DeviceType.PrivateUse1
    )
    assert total == pytest.approx(
        sum(event.self_device_time_total for event in events if event.device_type
            == torch.autograd.DeviceType.CPU)
    )


def test_legacy_profiler_reports_device_time(device):
    a = torch.randn(256, 256, device=device)
    with torch.autograd.profiler.profile(use_device=device) as prof:
        a @ a
    mm = _device_times(prof.key_averages(), "aten::mm")
    assert mm.device_time_total > 0
    assert all(event.device_time_total >= 0 for event in prof.key_averages())
