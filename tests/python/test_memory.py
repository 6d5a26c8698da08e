"""Memory of a generated backend: the caching allocator and its statistics,
out-of-memory behaviour, and pinned host memory."""

import gc
import signal

import pytest
import torch

MiB = 1 << 20


@pytest.fixture(autouse=True)
def _clean_allocator(mod):
    gc.collect()
    mod.synchronize()
    mod.empty_cache()
    yield
    gc.collect()


# --8<-- [start:memory-statistics]
def test_allocated_and_reserved_follow_tensors(device, mod):
    before = mod.memory_allocated()
    x = torch.empty(MiB, dtype=torch.uint8, device=device)
    assert mod.memory_allocated() == before + MiB
    assert mod.memory_reserved() >= mod.memory_allocated()
    del x
    assert mod.memory_allocated() == before
    # The block stays cached until empty_cache() gives it back.
    assert mod.memory_reserved() >= MiB
    mod.empty_cache()
    assert mod.memory_reserved() == mod.memory_allocated()


def test_cached_block_is_reused(device, mod):
    x = torch.empty(2 * MiB, dtype=torch.uint8, device=device)
    pointer = x.data_ptr()
    del x
    reserved = mod.memory_reserved()
    y = torch.empty(2 * MiB, dtype=torch.uint8, device=device)
    assert y.data_ptr() == pointer
    assert mod.memory_reserved() == reserved
# --8<-- [end:memory-statistics]


def test_many_cached_blocks_are_reused_by_size(device, mod):
    # More blocks than the cache keeps spare bookkeeping for, of two sizes,
    # freed and taken again in turns: each size gets its own blocks back,
    # and nothing new is reserved.
    sizes = [4096 if i % 2 else 3 * 4096 for i in range(200)]
    active = mod.memory_stats()["active.all.current"]
    first = [torch.empty(n, dtype=torch.uint8, device=device) for n in sizes]
    pointers = {(t.numel(), t.data_ptr()) for t in first}
    allocated = mod.memory_allocated()
    del first
    reserved = mod.memory_reserved()
    for _ in range(3):
        again = [torch.empty(n, dtype=torch.uint8, device=device)
                 for n in sizes]
        assert {(t.numel(), t.data_ptr()) for t in again} == pointers
        assert mod.memory_allocated() == allocated
        del again
    assert mod.memory_reserved() == reserved
    assert mod.memory_stats()["active.all.current"] == active


def test_active_stats_are_those_of_the_allocations(device, mod):
    # Once no other stream holds a block, the active stats are those of the
    # allocations: blocks taken, cached, taken again, and freed while
    # another stream used them.
    def pairs():
        stats = mod.memory_stats()
        return [(stats[f"active{unit}.{pool}.{field}"],
                 stats[f"{name}.{pool}.{field}"])
                for unit, name in (("", "allocation"),
                                   ("_bytes", "allocated_bytes"))
                for pool in ("all", "small_pool", "large_pool")
                for field in ("current", "peak", "allocated", "freed")]

    before = mod.memory_stats()["active_bytes.all.current"]
    small = torch.empty(1000, device=device)
    large = torch.empty(4 * MiB, dtype=torch.uint8, device=device)
    assert mod.memory_stats()["active_bytes.all.current"] > before
    del small
    small = torch.empty(1000, device=device)
    side = mod.Stream()
    with mod.stream(side):
        large.add_(1)
    large.record_stream(side)
    del large, small
    mod.synchronize()
    torch.empty(8, device=device)
    for active, allocated in pairs():
        assert active == allocated
    assert mod.memory_stats()["active_bytes.large_pool.peak"] >= 4 * MiB


def test_a_block_another_stream_holds_is_active_not_allocated(device, mod):
    # As CUDA's allocator counts it: the free drops memory_allocated() at
    # once, and the block stays active (not reusable) until the work queued
    # on the other stream before the free is done.
    x = torch.empty(4 * MiB, dtype=torch.uint8, device=device)
    mod.synchronize()
    stats = mod.memory_stats()
    allocated, active = (stats["allocated_bytes.all.current"],
                         stats["active_bytes.all.current"])
    freed = stats["active.all.freed"]
    side = mod.Stream()
    with mod.stream(side):
        x.add_(1)
        side.synchronize()  # nothing queued holds x ...
        mod._sleep(300)  # ... and the side stream is busy at its free
    x.record_stream(side)
    del x
    stats = mod.memory_stats()
    assert mod.memory_allocated() == allocated - 4 * MiB
    assert stats["allocated_bytes.large_pool.current"] <= active - 4 * MiB
    assert stats["active_bytes.all.current"] == active
    assert stats["active.all.freed"] == freed
    states = {block["state"] for segment in mod.memory_snapshot()
              for block in segment["blocks"]}
    assert "active_pending_free" in states, states
    side.synchronize()
    kept = torch.empty(8, device=device)  # an allocation takes finished frees
    stats = mod.memory_stats()
    assert stats["active_bytes.all.current"] == active - 4 * MiB + 512
    assert stats["active.all.freed"] == freed + 1
    assert stats["allocated_bytes.all.current"] == allocated - 4 * MiB + 512
    del kept


def test_peak_and_reset(device, mod):
    mod.reset_peak_memory_stats()
    base = mod.memory_allocated()
    x = torch.empty(4 * MiB, dtype=torch.uint8, device=device)
    del x
    assert mod.max_memory_allocated() >= base + 4 * MiB
    assert mod.max_memory_reserved() >= 4 * MiB
    mod.reset_peak_memory_stats()
    assert mod.max_memory_allocated() == mod.memory_allocated()


def test_memory_stats_keys(device, mod):
    x = torch.empty(1000, device=device)
    stats = mod.memory_stats()
    assert stats["allocated_bytes.all.current"] == mod.memory_allocated()
    assert stats["allocation.all.current"] >= 1
    assert stats["num_device_alloc"] >= 1
    assert "reserved_bytes.large_pool.peak" in stats
    del x


def test_accelerator_memory_api_agrees(device, mod):
    x = torch.empty(3 * MiB, dtype=torch.uint8, device=device)
    assert torch.accelerator.memory_allocated() == mod.memory_allocated()
    assert torch.accelerator.memory_reserved() == mod.memory_reserved()
    assert torch.accelerator.max_memory_allocated() >= 3 * MiB
    assert torch.accelerator.memory_stats()["allocated_bytes.all.current"] == (
        mod.memory_allocated()
    )
    del x
    torch.accelerator.empty_cache()
    assert mod.memory_reserved() == mod.memory_allocated()
    free, total = torch.accelerator.get_memory_info()
    assert 0 < free <= total


def test_statistics_are_per_device(device, mod, two_devices):
    before = mod.memory_allocated(1)
    x = torch.empty(MiB, dtype=torch.uint8, device=f"{device}:1")
    assert mod.memory_allocated(1) == before + MiB
    assert mod.memory_allocated(f"{device}:1") == before + MiB
    del x


def test_mem_get_info(mod):
    free, total = mod.mem_get_info()
    assert 0 < free <= total
    assert total == mod.get_device_properties().total_memory


# --8<-- [start:memory-oom]
def test_out_of_memory_is_recoverable(device, mod):
    _, total = mod.mem_get_info()
    ooms = mod.memory_stats()["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError, match="out of memory"):
        torch.empty(total + MiB, dtype=torch.uint8, device=device)
    assert mod.memory_stats()["num_ooms"] == ooms + 1
    # The process stays usable.
    x = torch.ones(10, device=device)
    assert x.sum().item() == 10


def test_cache_is_released_before_out_of_memory(device, mod):
    _, total = mod.mem_get_info()
    big = total // 2 + MiB
    x = torch.empty(big, dtype=torch.uint8, device=device)
    del x  # cached, still reserved
    assert mod.memory_reserved() >= big
    # A differently sized request does not fit next to the cached block.
    y = torch.empty(big + 4 * MiB, dtype=torch.uint8, device=device)
    assert mod.memory_stats()["num_alloc_retries"] >= 1
    del y
# --8<-- [end:memory-oom]


def test_capacity_follows_environment(device, run_python):
    code = (
        "import torch\n"
        f"m = torch.{device}\n"
        "print(m.mem_get_info()[1])\n"
        "try:\n"
        f"    torch.empty(80 << 20, dtype=torch.uint8, device='{device}')\n"
        "except torch.OutOfMemoryError:\n"
        "    print('oom')\n"
    )
    result = run_python(code, env={"ACCGEN_EMU_MEMORY_BYTES": str(64 << 20)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(64 << 20), "oom"]


_HOST_READ = (
    "import ctypes, torch\n"
    "t = torch.full((4,), 7, dtype=torch.int32, device='{device}')\n"
    "print(int(t.sum()), flush=True)\n"
    "print(ctypes.c_int32.from_address(t.data_ptr()).value, flush=True)\n"
)


def test_guard_faults_a_host_read_of_device_memory(device, run_python):
    """With the access guard on (as in the test suites) the host reading a
    device pointer dies of SIGSEGV at once; off (the emulator's default, the
    release mode) the same read succeeds."""
    code = _HOST_READ.format(device=device)
    guarded = run_python(code, env={"ACCGEN_EMU_PROTECT": "1"})
    assert guarded.returncode == -signal.SIGSEGV, guarded.stderr
    assert guarded.stdout.split() == ["28"]
    released = run_python(code, env={"ACCGEN_EMU_PROTECT": None})
    assert released.returncode == 0, released.stderr
    assert released.stdout.split() == ["28", "7"]


# ------------------------------------------------------------ pinned memory


# --8<-- [start:pinned-memory]
def test_pin_memory(device, mod, pinned_memory):
    x = torch.arange(6.0)
    assert not x.is_pinned()
    pinned = x.pin_memory()
    assert pinned.is_pinned()
    assert torch.equal(pinned, x)
    on_device = pinned.to(device, non_blocking=True)
    mod.synchronize()
    assert torch.equal(on_device.cpu(), x)


def test_pinned_storage_slices_stay_pinned(pinned_memory):
    pinned = torch.randn(10).pin_memory()
    rewrapped = torch.tensor((), dtype=torch.float32).set_(
        pinned.untyped_storage()[8:], size=(5,), stride=(1,), storage_offset=0
    )
    assert rewrapped.is_pinned()
    assert rewrapped.data_ptr() != pinned.data_ptr()


def test_pinned_factory(device, pinned_memory):
    y = torch.empty(5, pin_memory=True)
    assert y.is_pinned()
    y.copy_(torch.ones(5, device=device))
    assert y.tolist() == [1.0] * 5


def test_data_loader_pins_batches(device, pinned_memory):
    from torch.utils.data import DataLoader, TensorDataset

    dataset = TensorDataset(torch.arange(8.0).reshape(4, 2))
    batches = []
    for (batch,) in DataLoader(dataset, batch_size=2, pin_memory=True):
        assert batch.is_pinned()
        batches.append(batch.to(device, non_blocking=True))
    assert torch.cat(batches).cpu().tolist() == dataset.tensors[0].tolist()
# --8<-- [end:pinned-memory]


def test_host_cache_and_stats(mod, pinned_memory):
    mod.empty_host_cache()
    pinned = torch.empty(MiB, dtype=torch.uint8).pin_memory()
    stats = mod.host_memory_stats()
    assert stats["active_bytes.current"] >= MiB
    del pinned
    cached = mod.host_memory_stats()["allocated_bytes.current"]
    assert cached >= MiB
    torch.accelerator.empty_host_cache()
    assert mod.host_memory_stats()["allocated_bytes.current"] < cached
