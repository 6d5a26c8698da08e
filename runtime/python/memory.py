"""torch.<device>.memory: the caching allocator's memory tools, as
torch.cuda.memory has them.

Besides the statistics of the device module (memory_allocated,
memory_stats, ...), re-exported here, this module records the allocator's
history and takes snapshots in the structure of torch.cuda.memory's, which
torch.cuda._memory_viz reads and https://pytorch.org/memory_viz draws
(Note [Memory history] in runtime/src/Allocator.cpp), and prints
memory_summary() tables.
"""

import pickle
from typing import Any, Literal, Optional

from . import _C
from ._device import (
    _DEVICE_TYPE,
    _Device,
    _device_index,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)

__all__ = [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
]


# --8<-- [start:record-memory-history]
def _record_memory_history(
    enabled: Optional[Literal["state", "all"]] = "all",
    context: Optional[Literal["state", "alloc", "all"]] = "all",
    stacks: Literal["python", "all"] = "all",
    max_entries: int = 2**31 - 1,
    device: _Device = None,
) -> None:
    """Starts recording the allocator's events, as
    torch.cuda.memory._record_memory_history does: `enabled=None` stops and
    forgets them. `context=None` keeps no stacks. The history covers every
    device of the backend; `device` is accepted for torch.cuda's
    signature."""
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', not {enabled!r}")
    if context not in (None, "state", "alloc", "all"):
        raise ValueError(f"context must be None, 'state', 'alloc' or 'all', not {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', not {stacks!r}")
    if max_entries < 1:
        raise ValueError(f"max_entries must be positive, not {max_entries}")
    _device_index(device)  # a device of another type is an error
    _C._record_memory_history(enabled is not None, context is not None, max_entries)
# --8<-- [end:record-memory-history]


def _snapshot(device: _Device = None) -> dict[str, Any]:
    """The allocator's segments, their blocks and the recorded events:
    {"segments": [...], "device_traces": [[...] per device], ...}, as
    torch.cuda.memory._snapshot() returns them."""
    _device_index(device)
    return _C._snapshot()


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Writes _snapshot() to `filename` as a pickle, for
    torch.cuda._memory_viz and https://pytorch.org/memory_viz."""
    snapshot = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


def memory_snapshot() -> list[dict[str, Any]]:
    """The allocator's segments (torch.cuda.memory_snapshot())."""
    return _snapshot()["segments"]


def _format_bytes(value: int) -> str:
    for unit in ("B ", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:6d} {unit}" if unit == "B " else f"{value:6.0f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _format_count(value: int) -> str:
    for unit in (" ", "K", "M"):
        if abs(value) < 1000 or unit == "M":
            return f"{value:7d} {unit}" if unit == " " else f"{value:7.0f} {unit}"
        value //= 1000
    raise AssertionError("unreachable")


def memory_summary(device: _Device = None, abbreviated: bool = False) -> str:
    """The allocator's statistics as a table, in the layout of
    torch.cuda.memory_summary(): each metric's current value, peak, total
    allocated and total freed, for all blocks and (unless `abbreviated`)
    for the large and small pools."""
    index = _device_index(device)
    stats = memory_stats(index)
    rows = [
        ("allocated_bytes", "Allocated memory", _format_bytes),
        ("active_bytes", "Active memory", _format_bytes),
        ("requested_bytes", "Requested memory", _format_bytes),
        ("reserved_bytes", "Reserved memory", _format_bytes),
        ("inactive_split_bytes", "Non-releasable memory", _format_bytes),
        ("allocation", "Allocations", _format_count),
        ("active", "Active allocs", _format_count),
        ("segment", "Reserved segments", _format_count),
        ("inactive_split", "Non-releasable allocs", _format_count),
    ]
    pools = [("all", "")] if abbreviated else [
        ("all", ""), ("large_pool", "      from large pool"),
        ("small_pool", "      from small pool")]
    width = 75
    rule = "|" + "=" * width + "|"
    thin = "|" + "-" * width + "|"
    lines = [
        rule,
        "| {:<73} |".format(f"PyTorch {_DEVICE_TYPE} memory summary, device ID {index}"),
        thin,
        "| {:<73} |".format(
            f"            {_DEVICE_TYPE} OOMs: {stats.get('num_ooms', 0):<13d}|"
            f"       driver alloc retries: {stats.get('num_alloc_retries', 0):<8d}"),
        rule,
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ",
    ]
    lines[-1] = "|" + lines[-1] + "|"
    for key, title, fmt in rows:
        lines.append(thin)
        for pool, label in pools:
            name = title if pool == "all" else label
            values = [stats.get(f"{key}.{pool}.{field}", 0)
                      for field in ("current", "peak", "allocated", "freed")]
            lines.append("| {:<21} | {} | {} | {} | {} |".format(
                name, *(fmt(v) for v in values)))
    lines.append(rule)
    for key, title in (("oversize_allocations", "Oversize allocations"),
                       ("oversize_segments", "Oversize segments")):
        values = [stats.get(f"{key}.{field}", 0)
                  for field in ("current", "peak", "allocated", "freed")]
        lines.append("| {:<21} | {} | {} | {} | {} |".format(
            title, *(_format_count(v) for v in values)))
    lines.append(rule)
    return "\n".join(lines) + "\n"

