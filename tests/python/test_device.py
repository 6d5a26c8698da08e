"""Devices, streams, events, generators, serialization and the Python
integration of a generated backend (torch.<device>, torch.accelerator,
autoload)."""

import copy
import io

import pytest
import torch


# ------------------------------------------------------------------ devices


def test_device_module_is_registered(device, mod):
    assert torch._C._get_privateuse1_backend_name() == device
    assert mod.is_available()
    assert mod.device_count() >= 1
    assert torch.device(device).type == device


def test_device_count_follows_environment(device, run_python):
    code = f"import torch; print(torch.{device}.device_count())"
    for count in ("1", "3"):
        result = run_python(code, env={"ACCGEN_EMU_DEVICE_COUNT": count})
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == count


def test_set_and_current_device(device, mod, two_devices):
    previous = mod.current_device()
    try:
        mod.set_device(1)
        assert mod.current_device() == 1
        assert torch.empty(2, device=device).device == torch.device(device, 1)
        mod.set_device(f"{device}:0")
        assert mod.current_device() == 0
        assert torch.empty(2, device=device).device == torch.device(device, 0)
    finally:
        mod.set_device(previous)


def test_device_context_manager_restores(device, mod, two_devices):
    assert mod.current_device() == 0
    with mod.device(1):
        assert mod.current_device() == 1
        with mod.device(0):
            assert mod.current_device() == 0
        assert mod.current_device() == 1
    assert mod.current_device() == 0
    with mod.device(None):
        assert mod.current_device() == 0
    x = torch.ones(1, device=f"{device}:1")
    with mod.device_of(x):
        assert mod.current_device() == 1
    assert mod.current_device() == 0


def test_invalid_device_index_is_a_clear_error(device, mod, suite, checks):
    # The shipped check (<package>._conformance), then this runtime's words.
    checks.check_invalid_index(suite)
    bad = mod.device_count() + 3
    with pytest.raises(RuntimeError, match=f"Invalid device index {bad}"):
        torch.ones(2, device=f"{device}:{bad}")
    with pytest.raises(RuntimeError, match="valid indices are 0"):
        mod.set_device(bad)
    # The failure changed nothing.
    assert mod.current_device() == 0
    assert torch.ones(2, device=device).sum().item() == 2


def test_current_device_is_per_thread(device, mod, two_devices):
    import threading

    seen = {}

    def worker():
        mod.set_device(1)
        seen["worker"] = torch.empty(1, device=device).device.index

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen["worker"] == 1
    assert mod.current_device() == 0


def test_device_properties(mod):
    properties = mod.get_device_properties(0)
    assert properties.name
    assert properties.total_memory > 0
    assert mod.get_device_name() == properties.name
    assert mod.get_device_capability() == (properties.major, properties.minor)


def test_accelerator_api(device, mod):
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device(device)
    assert torch.accelerator.device_count() == mod.device_count()
    assert torch.accelerator.current_device_index() == mod.current_device()
    x = torch.ones(4, device=device) * 3
    torch.accelerator.synchronize()
    assert x.sum().item() == 12


def test_accelerator_device_index(mod, two_devices):
    with torch.accelerator.device_index(1):
        assert mod.current_device() == 1
        assert torch.accelerator.current_device_index() == 1
    assert mod.current_device() == 0


def test_tensor_and_module_methods(device):
    x = torch.arange(3.0)
    y = getattr(x, device)()
    assert getattr(y, f"is_{device}")
    assert not getattr(x, f"is_{device}")
    module = torch.nn.Linear(2, 2)
    getattr(module, device)()
    assert module.weight.device.type == device
    storage = getattr(torch.UntypedStorage(8), device)()
    assert storage.device.type == device


# ----------------------------------------------------------------- autoload


# --8<-- [start:autoload-on]
def test_autoload_without_importing_the_package(device, run_python):
    code = f"import torch; print(torch.ones(2, device='{device}').cpu().tolist())"
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[1.0, 1.0]"
# --8<-- [end:autoload-on]


def test_exit_with_live_tensors_and_pending_work(device, run_python):
    # Tensors, pinned memory and queued work still alive at exit: the
    # process must end cleanly, whatever order teardown happens in.
    code = (
        "import torch\n"
        f"m = torch.{device}\n"
        f"keep = [torch.randn(256, 256, device='{device}:{{i}}'.format(i=i)) "
        "for i in range(m.device_count())]\n"
        "pinned = torch.ones(1 << 16).pin_memory() if hasattr(m, 'empty_host_cache') else None\n"
        "stream = m.Stream()\n"
        "with m.stream(stream):\n"
        "    busy = [k.t().contiguous() for k in keep]\n"
        "print('done')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    assert result.stderr == ""


# --8<-- [start:autoload-off]
def test_autoload_can_be_disabled(device, run_python):
    code = f"import torch; print(hasattr(torch, '{device}'))"
    result = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
# --8<-- [end:autoload-off]


# ------------------------------------------------------- streams and events


# --8<-- [start:streams-device-module]
def test_streams_from_the_device_module(device, mod):
    stream = mod.Stream()
    assert isinstance(stream, torch.Stream)
    assert stream.device == torch.device(device, 0)
    default = mod.default_stream()
    assert mod.current_stream() == default
    with mod.stream(stream):
        assert mod.current_stream() == stream
        x = torch.ones(1000, device=device) * 2
    assert mod.current_stream() == default
    stream.synchronize()
    assert stream.query()
    assert x.sum().item() == 2000
# --8<-- [end:streams-device-module]


def test_stream_priorities(mod):
    least, greatest = mod.Stream.priority_range()
    assert greatest <= least
    high = mod.Stream(priority=-1)
    low = mod.Stream(priority=0)
    assert high.stream_id != low.stream_id
    assert high.stream_id != mod.default_stream().stream_id


def test_streams_from_pools_round_robin(mod):
    ids = {mod.Stream().stream_id for _ in range(16)}
    # A bounded pool, not a fresh driver stream each time.
    assert 1 < len(ids) <= 8


# --8<-- [start:streams-torch-api]
def test_torch_stream_and_event_interop(device):
    stream = torch.Stream(device=device)
    assert stream.device.type == device
    assert stream != torch.accelerator.current_stream()
    event = torch.Event(device=device, enable_timing=True)
    start = stream.record_event(torch.Event(device=device, enable_timing=True))
    previous = torch.accelerator.current_stream()
    torch.accelerator.set_stream(stream)
    try:
        y = torch.rand(256, 256, device=device)
        y = y @ y
    finally:
        torch.accelerator.set_stream(previous)
    stream.record_event(event)
    event.synchronize()
    assert event.query()
    assert start.elapsed_time(event) >= 0.0
# --8<-- [end:streams-torch-api]


def test_stream_as_context_manager(device, mod):
    stream = torch.Stream(device=device)
    with stream:
        assert torch.accelerator.current_stream() == stream
        assert mod.current_stream() == stream
    assert mod.current_stream() == mod.default_stream()


def test_current_stream_is_per_thread(mod):
    import threading

    stream = mod.Stream()
    seen = {}

    def worker():
        seen["before"] = mod.current_stream()
        mod.set_stream(stream)
        seen["after"] = mod.current_stream()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen["before"] == mod.default_stream()
    assert seen["after"] == stream
    assert mod.current_stream() == mod.default_stream()


def test_unknown_stream_is_a_clear_error(device, mod):
    device_type = mod.default_stream().device_type
    bogus = torch.Stream(stream_id=12345, device_index=0, device_type=device_type)
    with pytest.raises(RuntimeError, match="unknown .* stream id 12345"):
        mod.set_stream(bogus)
    assert mod.current_stream() == mod.default_stream()


def test_current_stream_via_accelerator(device, mod):
    stream = mod.Stream()
    previous = torch.accelerator.current_stream()
    torch.accelerator.set_stream(stream)
    try:
        assert torch.accelerator.current_stream() == stream
        assert mod.current_stream() == stream
    finally:
        torch.accelerator.set_stream(previous)
    assert mod.current_stream() == previous


# --8<-- [start:events-across-streams]
def test_events_order_work_across_streams(device, mod):
    producer = mod.Stream()
    consumer = mod.Stream()
    with mod.stream(producer):
        x = torch.full((512,), 3.0, device=device)
        done = mod.Event()
        done.record(producer)
    consumer.wait_event(done)
    with mod.stream(consumer):
        y = x * 2
    consumer.synchronize()
    assert y.sum().item() == 3072.0
# --8<-- [end:events-across-streams]


def test_event_timing(suite, checks):
    # The shipped check: more than 0 ms, no more than the host saw.
    checks.check_events(suite)


class _NoTimeEvent:
    # An event of a driver whose timed events report 0 ms.
    def __init__(self, event):
        self.event = event

    def __getattr__(self, name):
        return getattr(self.event, name)

    def elapsed_time(self, other):
        self.event.elapsed_time(getattr(other, "event", other))
        return 0.0


class _NoTimeDevice:
    # The device module, with such events.
    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        return getattr(self.module, name)

    def Event(self, *args, **kwargs):  # noqa: N802 (the device module's name)
        return _NoTimeEvent(self.module.Event(*args, **kwargs))


def test_the_event_check_fails_a_driver_whose_events_report_no_time(
        suite, checks):
    no_time = copy.copy(suite)
    no_time.module = _NoTimeDevice(suite.module)
    with pytest.raises(AssertionError, match="report 0.0 ms"):
        checks.check_events(no_time)


def test_event_without_timing_refuses_elapsed_time(mod):
    start = mod.Event()
    end = mod.Event()
    start.record()
    end.record()
    end.synchronize()
    with pytest.raises((RuntimeError, ValueError), match="enable_timing"):
        start.elapsed_time(end)


def test_unrecorded_event_is_complete(mod):
    assert mod.Event().query()


def test_synchronize(device, mod):
    x = torch.ones(100, device=device)
    y = x + x
    mod.synchronize()
    mod.synchronize(0)
    assert y.cpu().sum().item() == 200


# ------------------------------------------------------------------- random


# --8<-- [start:generators-seed]
def test_manual_seed_reproduces(device, mod):
    mod.manual_seed(1234)
    a = torch.rand(16, device=device)
    mod.manual_seed(1234)
    b = torch.rand(16, device=device)
    c = torch.rand(16, device=device)
    assert torch.equal(a.cpu(), b.cpu())
    assert not torch.equal(b.cpu(), c.cpu())
    assert mod.initial_seed() == 1234
# --8<-- [end:generators-seed]


# --8<-- [start:generators-independent]
def test_device_generator_is_independent_of_cpu(device, mod):
    mod.manual_seed(7)
    a = torch.rand(8, device=device)
    mod.manual_seed(7)
    torch.rand(8)  # the CPU generator moves, the device's must not
    b = torch.rand(8, device=device)
    assert torch.equal(a.cpu(), b.cpu())
# --8<-- [end:generators-independent]


def test_torch_manual_seed_seeds_the_device(device):
    torch.manual_seed(99)
    a = torch.randn(8, device=device)
    torch.manual_seed(99)
    b = torch.randn(8, device=device)
    assert torch.equal(a.cpu(), b.cpu())


def test_rng_state_round_trip(device, mod, suite, checks):
    # The shipped check: seeds repeat, states restore, generators are per
    # device; then the state's form.
    checks.check_rng(suite)
    state = mod.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"


# --8<-- [start:generators-explicit]
def test_explicit_generator(device):
    generator = torch.Generator(device=device)
    assert generator.device.type == device
    generator.manual_seed(5)
    a = torch.rand(8, device=device, generator=generator)
    generator.manual_seed(5)
    b = torch.rand(8, device=device, generator=generator)
    assert torch.equal(a.cpu(), b.cpu())
    state = generator.get_state()
    clone = torch.Generator(device=device)
    clone.set_state(state)
    assert torch.equal(
        torch.rand(4, device=device, generator=generator).cpu(),
        torch.rand(4, device=device, generator=clone).cpu(),
    )
# --8<-- [end:generators-explicit]


def test_per_device_generators(device, mod, two_devices):
    mod.manual_seed_all(3)
    a0 = torch.rand(4, device=f"{device}:0")
    a1 = torch.rand(4, device=f"{device}:1")
    assert torch.equal(a0.cpu(), a1.cpu())
    with mod.device(1):
        mod.manual_seed(11)
    b0 = torch.rand(4, device=f"{device}:0")
    b1 = torch.rand(4, device=f"{device}:1")
    mod.manual_seed_all(3)
    assert torch.equal(torch.rand(4, device=f"{device}:0").cpu(), a0.cpu())
    assert not torch.equal(b0.cpu(), b1.cpu())


# ------------------------------------------------------------ serialization


# --8<-- [start:serialization-save-load]
def test_save_load_round_trip(device):
    x = torch.arange(12, dtype=torch.float32, device=device).reshape(3, 4)
    buffer = io.BytesIO()
    torch.save({"x": x, "view": x[1]}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert loaded["x"].device == x.device
    assert torch.equal(loaded["x"].cpu(), x.cpu())
    # Views keep sharing their storage through a round trip.
    loaded["view"].fill_(-1)
    assert loaded["x"][1].cpu().tolist() == [-1.0] * 4
# --8<-- [end:serialization-save-load]


def test_load_with_map_location(suite, checks):
    # The shipped check: map_location to the CPU, to the device, from one
    # device to another, and a module's state dict.
    checks.check_serialization(suite)


# --8<-- [start:storage-location]
def test_storage_location_tags_and_restore(device, mod, two_devices):
    storage = torch.UntypedStorage(4, device=torch.device(device))
    assert torch.serialization.location_tag(storage) == f"{device}:0"
    storage = torch.UntypedStorage(4, device=torch.device(device, 1))
    assert torch.serialization.location_tag(storage) == f"{device}:1"
    cpu_storage = torch.arange(4.0).storage()
    restored = torch.serialization.default_restore_location(cpu_storage, f"{device}:1")
    assert getattr(restored, f"is_{device}")
    assert restored.device == torch.device(device, 1)
    tensor = torch.randn(4, 4, device=device)
    assert getattr(tensor.storage(), f"is_{device}")
    assert tensor.storage().size() == tensor.numel()
# --8<-- [end:storage-location]


# --8<-- [start:tensor-metadata]
def test_tensor_metadata_round_trip(device, tmp_path):
    tensor = torch.arange(4.0, device=device)
    assert torch._utils.get_tensor_metadata(tensor) == {}
    metadata = {"version_number": True, "format_number": False}
    torch._utils.set_tensor_metadata(tensor, metadata)
    assert torch._utils.get_tensor_metadata(tensor) == metadata
    # A shallow copy clones the metadata: changing the copy's leaves the
    # original's alone.
    detached = tensor.detach()
    assert torch._utils.get_tensor_metadata(detached) == metadata
    torch._utils.set_tensor_metadata(detached, {"version_number": False})
    assert torch._utils.get_tensor_metadata(tensor) == metadata
    path = tmp_path / "t.pt"
    torch.save(tensor, path)
    loaded = torch.load(path)
    assert torch._utils.get_tensor_metadata(loaded) == metadata
    assert loaded.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    on_cpu = torch.load(path, map_location="cpu")
    assert torch._utils.get_tensor_metadata(on_cpu) == {}
# --8<-- [end:tensor-metadata]


# ------------------------------------------------------------------- autocast


def test_autocast_context_is_accepted(device, mod, autocast):
    assert torch.float16 in mod.get_amp_supported_dtype()
    with torch.autocast(device_type=device, dtype=torch.float16):
        assert torch.is_autocast_enabled(device)
    assert not torch.is_autocast_enabled(device)


# ----------------------------------------------------------------------- fork

_FORK = """
import os, sys, torch
m = torch.{device}
{before}
pid = os.fork()
if pid == 0:
    try:
        x = torch.arange(4.0, device="{device}") * 2
        m.synchronize()
        ok = x.cpu().tolist() == [0.0, 2.0, 4.0, 6.0] and m.device_count() >= 1
        os._exit(0 if ok else 2)
    except RuntimeError as e:
        print(e, flush=True)
        os._exit(3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("before", ["", "assert m.device_count() >= 1",
                                    "assert m.is_available()"])
def test_a_child_forked_before_the_device_is_initialized_uses_it(device, run_python, before):
    # As with CUDA: import, device_count() and is_available() do not
    # initialize the device, so a child forked after them uses it.
    result = run_python(_FORK.format(device=device, before=before), timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0", result.stdout


def test_a_child_forked_after_the_device_is_initialized_raises(device, run_python):
    # As with CUDA: the child of a process that used the device raises at
    # its first use, it does not hang or crash.
    result = run_python(_FORK.format(device=device, before=f"torch.ones(1, device='{device}')"),
                        timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "3", result.stdout
    assert "Cannot re-initialize" in lines[0] and "forked subprocess" in lines[0]



def test_lazy_init_state(device, mod, run_python):
    code = (
        f"import torch; m = torch.{device}; a = m.is_initialized(); "
        f"torch.ones(1, device='{device}'); print(a, m.is_initialized())"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False True"


def test_rng_state_is_a_seed_and_an_offset(device, mod):
    # Note [Device generator state]: 16 bytes, as DTensor reads them.
    mod.manual_seed(1234)
    state = mod.get_rng_state()
    assert state.numel() == 16
    assert state[:8].view(torch.int64).item() == 1234
    assert state[8:].view(torch.int64).item() == 0
    torch.rand(3, device=device)
    assert mod.get_rng_state()[8:].view(torch.int64).item() == 1
    # The first draw after seeding is the CPU's.
    want = torch.rand(5, generator=torch.Generator().manual_seed(7))
    mod.manual_seed(7)
    assert torch.equal(torch.rand(5, device=device).cpu(), want)
    # One (seed, offset), one stream; another offset, another stream.
    state[8:] = torch.tensor([5], dtype=torch.int64).view(torch.uint8)
    mod.set_rng_state(state)
    a = torch.randn(6, device=device).cpu()
    mod.set_rng_state(state)
    assert torch.equal(torch.randn(6, device=device).cpu(), a)
    state[8:] = torch.tensor([6], dtype=torch.int64).view(torch.uint8)
    mod.set_rng_state(state)
    assert not torch.equal(torch.randn(6, device=device).cpu(), a)
