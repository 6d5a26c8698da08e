"""torch.<device>.memory: the caching allocator's memory tools, as
torch.cuda.memory has them.

Besides the statistics of the device module (memory_allocated,
memory_stats, memory_summary, ...), re-exported here, this module records
the allocator's history and takes snapshots in the structure of
torch.cuda.memory's, which torch.cuda._memory_viz reads and
https://pytorch.org/memory_viz draws (Note [Memory history] in
runtime/src/Allocator.cpp).
"""

import pickle
from typing import Any, Literal, Optional

from . import _C
from ._device import (
    _Device,
    _device_index,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_summary,
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
