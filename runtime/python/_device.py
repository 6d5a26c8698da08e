"""The device module of an accgen backend: ``torch.<device>``.

This file is accgen's runtime, not generated: each backend's wheel carries it
as ``<package>/_device.py``, and the backend's ``__init__.py`` re-exports it
and registers the package as ``torch.<device>``. The device's name and
features come from the backend's compiled configuration (``_C._config``).

The functions mirror ``torch.cuda``: devices, streams and events, random
number generators, memory statistics and the caching allocator.
"""

import atexit
import functools
import importlib.metadata
import os
import threading
import traceback
import warnings
from collections import OrderedDict
from types import ModuleType
from typing import Any, Callable, NamedTuple, Optional, Union

import torch
from torch._utils import _LazySeedTracker

from . import _C

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "compile_path",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_function_counts",
    "device_of",
    "empty_cache",
    "empty_host_cache",
    "fallback_counts",
    "transfer_bytes",
    "get_amp_supported_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "host_addressable",
    "host_memory_stats",
    "init",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
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
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "structured_loop_counts",
    "synchronize",
]

_DEVICE_TYPE: str = _C._config["device"]
_PACKAGE: str = _C._config["package"]

_Device = Union[int, str, torch.device, None]

# ------------------------------------------------------------ initialisation

_initialized = False
_init_lock = threading.Lock()
_queued_calls: list[tuple[Callable[[], None], list[str]]] = []
_lazy_seed_tracker = _LazySeedTracker()

#: The default torch.Generator of each device, filled by _lazy_init().
default_generators: tuple[torch.Generator, ...] = ()


def _is_in_bad_fork() -> bool:
    """Whether this process was forked after it used the device."""
    return _C._is_in_bad_fork()


def is_initialized() -> bool:
    """Whether the device runtime has been initialised in this process."""
    return _initialized and not _is_in_bad_fork()


def _lazy_call(callable: Callable[[], None], **kwargs: Any) -> None:
    # Seeding before the first use of the device is recorded and replayed by
    # _lazy_init, so that `import torch; torch.manual_seed(0)` does not start
    # the driver.
    if is_initialized():
        callable()
    elif kwargs.get("seed_all", False):
        _lazy_seed_tracker.queue_seed_all(callable, traceback.format_stack())
    elif kwargs.get("seed", False):
        _lazy_seed_tracker.queue_seed(callable, traceback.format_stack())
    else:
        _queued_calls.append((callable, traceback.format_stack()))


# --8<-- [start:lazy-init]
def _lazy_init() -> None:
    """Initialises the runtime once; PyTorch calls it before the first use."""
    global _initialized, default_generators
    if is_initialized():
        return
    with _init_lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                f"Cannot re-initialize {_DEVICE_TYPE} in forked subprocess. To use "
                f"{_DEVICE_TYPE} with multiprocessing, you must use the 'spawn' "
                "start method"
            )
        _C._init()
        default_generators = tuple(
            _C._get_default_generator(index) for index in range(device_count())
        )
        _initialized = True
        calls = list(_queued_calls)
        calls.extend(call for call in _lazy_seed_tracker.get_calls() if call)
        _queued_calls.clear()
        for queued_call, origin in calls:
            try:
                queued_call()
            except Exception as error:
                message = (
                    f"{_DEVICE_TYPE} call failed lazily at initialization with error: "
                    f"{error}\n\n{_DEVICE_TYPE} call was originally invoked at:\n\n"
                    + "".join(origin)
                )
                raise RuntimeError(message) from error
# --8<-- [end:lazy-init]


def init() -> None:
    """Initialises the device runtime (it is otherwise done on first use)."""
    _lazy_init()


# ------------------------------------------------------------------- devices


def _device_index(device: _Device, optional: bool = True) -> int:
    # The index `device` names; None (and the device type without an index) name the
    # current device when `optional`.
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != _DEVICE_TYPE:
            raise ValueError(f"Expected a device of type '{_DEVICE_TYPE}', got {device}")
        device = device.index
    if device is None:
        if not optional:
            raise ValueError(f"Expected a device of type '{_DEVICE_TYPE}' with an index")
        return current_device()
    if isinstance(device, int):
        return device
    raise TypeError(f"Expected a device of type '{_DEVICE_TYPE}' or a device index, got {device!r}")


def is_available() -> bool:
    """Whether the driver reports at least one device."""
    return _C._get_device_count() > 0


def device_count() -> int:
    """Number of devices; 0 when the driver is unusable."""
    return _C._get_device_count()


def current_device() -> int:
    """Index of the calling thread's current device."""
    return _C._get_device()


def set_device(device: _Device) -> None:
    """Makes `device` the calling thread's current device."""
    index = _device_index(device)
    if index >= 0:
        _C._set_device(index)


class device:
    """Context manager that makes `device` current and restores the previous
    device on exit; None or a negative index does nothing."""

    def __init__(self, device: _Device) -> None:
        self.idx = -1 if device is None else _device_index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = _C._exchange_device(self.idx)

    def __exit__(self, *exc_info: Any) -> bool:
        _C._set_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of tensor `obj` current (a CPU
    tensor changes nothing)."""

    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == _DEVICE_TYPE else None)


def synchronize(device: _Device = None) -> None:
    """Waits for all work on every stream of `device`."""
    _lazy_init()
    _C._synchronize(_device_index(device))


class _DeviceProperties(NamedTuple):
    name: str
    total_memory: int
    multi_processor_count: int
    major: int
    minor: int


def get_device_properties(device: _Device = None) -> _DeviceProperties:
    """Name, memory capacity, compute units and capability of `device`."""
    return _DeviceProperties(**_C._get_device_properties(_device_index(device)))


def get_device_name(device: _Device = None) -> str:
    """The driver's name for `device`."""
    return get_device_properties(device).name


def get_device_capability(device: _Device = None) -> tuple[int, int]:
    """(major, minor) capability version of `device`."""
    properties = get_device_properties(device)
    return properties.major, properties.minor


# ------------------------------------------------------- streams and events


class Stream(torch.Stream):
    """A stream of the device: work on it runs in order, concurrently
    with other streams. Lower `priority` numbers are higher priorities;
    negative priorities take the high-priority pool."""

    def __new__(cls, device: _Device = None, priority: int = 0, **kwargs: Any):
        _lazy_init()
        if "stream_id" in kwargs:
            return super().__new__(cls, priority=priority, **kwargs)
        index = _device_index(device)
        return super().__new__(
            cls, device=torch.device(_DEVICE_TYPE, index), priority=priority
        )

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """(least, greatest) priority of the driver; greatest <= least."""
        return _C._stream_priority_range()


class _EventType(type):
    # torch.Event's C methods accept exactly torch.Event (elapsed_time,
    # Stream.record_event), so the device's events are plain torch.Event objects;
    # isinstance(e, Event) recognises them by their device type.
    def __instancecheck__(cls, instance: Any) -> bool:
        return (
            isinstance(instance, torch.Event)
            and instance.device.type == _DEVICE_TYPE
        )


class Event(metaclass=_EventType):
    """An event of the device, for stream dependencies and timing (a
    torch.Event on the device)."""

    def __new__(
        cls,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
    ) -> torch.Event:
        _lazy_init()
        return torch.Event(
            device=torch.device(_DEVICE_TYPE, current_device()),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )


def _sleep(milliseconds: float) -> None:
    """Keeps the current stream busy for `milliseconds` with a kernel that
    sleeps, so that tests can hold work in flight (as torch.cuda._sleep)."""
    _lazy_init()
    _C._sleep(int(milliseconds * 1000))


def _wrap_stream(packed: tuple[int, int, int]) -> Stream:
    stream_id, device_index, device_type = packed
    return Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def current_stream(device: _Device = None) -> Stream:
    """The calling thread's current stream on `device`."""
    _lazy_init()
    return _wrap_stream(_C._get_current_stream(_device_index(device)))


def default_stream(device: _Device = None) -> Stream:
    """The default stream of `device`."""
    _lazy_init()
    return _wrap_stream(_C._get_default_stream(_device_index(device)))


def set_stream(stream: Optional[torch.Stream]) -> None:
    """Makes `stream` current on its device for the calling thread."""
    if stream is None:
        return
    _lazy_init()
    _C._set_stream(stream.stream_id, stream.device_index, stream.device_type)


class StreamContext:
    """Context manager that makes `stream` current on its device and
    restores the previous stream on exit; None does nothing."""

    def __init__(self, stream: Optional[torch.Stream]) -> None:
        self.stream = stream
        self.prev_stream: Optional[Stream] = None

    def __enter__(self) -> Optional[torch.Stream]:
        if self.stream is not None:
            self.prev_stream = current_stream(self.stream.device_index)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc_info: Any) -> bool:
        if self.prev_stream is not None:
            set_stream(self.prev_stream)
        return False


def stream(stream: Optional[torch.Stream]) -> StreamContext:
    """StreamContext(stream)."""
    return StreamContext(stream)


# --------------------------------------------------------------------- random


def _generator(index: int) -> torch.Generator:
    _lazy_init()
    return default_generators[index]


def get_rng_state(device: _Device = _DEVICE_TYPE) -> torch.Tensor:
    """The state of `device`'s default generator, as a CPU ByteTensor."""
    return _generator(_device_index(device)).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    """get_rng_state() of every device."""
    return [get_rng_state(index) for index in range(device_count())]


def set_rng_state(new_state: torch.Tensor, device: _Device = _DEVICE_TYPE) -> None:
    """Restores `device`'s default generator from get_rng_state()."""
    # Checked now, not when a call queued before initialisation runs. The
    # state is a 64-bit seed and a 64-bit offset, as a Philox generator's
    # (Note [Device generator state], runtime/src/Generator.cpp).
    if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    expected = 16
    if new_state.numel() != expected:
        raise RuntimeError(
            f"Expected an RNG state of {expected} bytes for {_DEVICE_TYPE}, "
            f"got {new_state.numel()}"
        )
    with torch._C._DisableFuncTorch():
        state = new_state.clone(memory_format=torch.contiguous_format)
    index = _device_index(device)
    _lazy_call(lambda: _generator(index).set_state(state))


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    """set_rng_state() for every device."""
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


def manual_seed(seed: int) -> None:
    """Seeds the current device's default generator."""
    seed = int(seed)
    index = current_device()
    _lazy_call(lambda: _generator(index).manual_seed(seed), seed=True)


def manual_seed_all(seed: int) -> None:
    """Seeds the default generator of every device."""
    seed = int(seed)

    def seed_all_devices() -> None:
        for index in range(device_count()):
            _generator(index).manual_seed(seed)

    _lazy_call(seed_all_devices, seed_all=True)


def seed() -> None:
    """Seeds the current device's default generator with a random number."""
    index = current_device()
    _lazy_call(lambda: _generator(index).seed())


def seed_all() -> None:
    """Seeds every device's default generator with one random number."""

    def seed_all_devices() -> None:
        random_seed = _generator(0).seed()
        for index in range(1, device_count()):
            _generator(index).manual_seed(random_seed)

    _lazy_call(seed_all_devices)


def initial_seed() -> int:
    """The seed of the current device's default generator."""
    return _generator(current_device()).initial_seed()


# --------------------------------------------------------------------- memory


def _flatten_stats(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten_stats(f"{prefix}.{key}" if prefix else key, inner, out)
    else:
        out[prefix] = value


def memory_stats(device: _Device = None) -> "OrderedDict[str, Any]":
    """The caching allocator's statistics for `device`, as torch.cuda's:
    keys like "allocated_bytes.all.current"."""
    flat: dict[str, Any] = {}
    _flatten_stats("", _C._memory_stats(_device_index(device)), flat)
    return OrderedDict(sorted(flat.items()))


def _stat(device: _Device, name: str, field: str) -> int:
    return _C._memory_stats(_device_index(device))[name]["all"][field]


def memory_allocated(device: _Device = None) -> int:
    """Bytes of device memory occupied by tensors."""
    return _stat(device, "allocated_bytes", "current")


def max_memory_allocated(device: _Device = None) -> int:
    """Peak of memory_allocated() since start or reset_peak_memory_stats()."""
    return _stat(device, "allocated_bytes", "peak")


def memory_reserved(device: _Device = None) -> int:
    """Bytes of device memory held by the caching allocator."""
    return _stat(device, "reserved_bytes", "current")


def max_memory_reserved(device: _Device = None) -> int:
    """Peak of memory_reserved() since start or reset_peak_memory_stats()."""
    return _stat(device, "reserved_bytes", "peak")


def reset_peak_memory_stats(device: _Device = None) -> None:
    """Restarts the peaks tracked by the allocator's statistics."""
    _C._reset_peak_memory_stats(_device_index(device))


def reset_accumulated_memory_stats(device: _Device = None) -> None:
    """Zeroes the allocator's accumulated counters."""
    _C._reset_accumulated_memory_stats(_device_index(device))


def empty_cache() -> None:
    """Returns the allocator's cached, unused device memory to the driver."""
    _C._empty_cache()


def mem_get_info(device: _Device = None) -> tuple[int, int]:
    """(free, total) bytes of device memory, as the driver reports them."""
    return _C._mem_get_info(_device_index(device))


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
        "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |",
    ]

    def row(name: str, stat: str, fmt: Callable[[int], str]) -> str:
        values = (fmt(stats.get(f"{stat}.{field}", 0))
                  for field in ("current", "peak", "allocated", "freed"))
        return "| {:<21} | {} | {} | {} | {} |".format(name, *values)

    for key, title, fmt in rows:
        lines.append(thin)
        for pool, label in pools:
            lines.append(row(title if pool == "all" else label, f"{key}.{pool}", fmt))
    lines.append(rule)
    for key, title in (("oversize_allocations", "Oversize allocations"),
                       ("oversize_segments", "Oversize segments")):
        lines.append(row(title, key, _format_count))
    lines.append(rule)
    return "\n".join(lines) + "\n"


def memory_snapshot() -> list[dict[str, Any]]:
    """The allocator's segments (torch.cuda.memory_snapshot());
    torch.<device>.memory has the history and snapshot tools."""
    return _C._snapshot()["segments"]


if _C._config["pinned_memory"]:

    def host_memory_stats() -> "OrderedDict[str, Any]":
        """Statistics of the pinned host memory allocator."""
        flat: dict[str, Any] = {}
        _flatten_stats("", _C._host_memory_stats(), flat)
        return OrderedDict(sorted(flat.items()))

    def empty_host_cache() -> None:
        """Returns cached, unused pinned host memory to the driver."""
        _C._empty_host_cache()

else:
    __all__.remove("host_memory_stats")
    __all__.remove("empty_host_cache")


# ----------------------------------------------------------------- fallbacks


def fallback_counts() -> dict[str, dict[str, int]]:
    """The operators that ran through a fallback in this process, and how
    often: {"emulate": {"aten::lgamma": 3}, "cpu": {...}}. The operators a
    backend still runs through its fallback are the ones to give kernels."""
    return {fallback: dict(sorted(ops.items()))
            for fallback, ops in sorted(_C._fallback_counts().items())}


def transfer_bytes() -> dict[str, int]:
    """The bytes the runtime copied between the host and the device in this
    process: {"host_to_device": ..., "device_to_host": ...}. On a device
    the host cannot address, what the operators on the CPU fallback cost in
    copies."""
    return dict(_C._transfer_bytes())


def structured_loop_counts() -> dict[str, int]:
    """The emulated operators that ran ATen's CPU loop directly on the
    device tensors in this process, and how often: {"aten::mul.Tensor": 12}
    (Note [Structured loops on the device] in runtime/src/emulate/Loops.cpp;
    rule 0 of docs/operators.md, "How an emulated operator runs")."""
    return dict(sorted(_C._structured_loop_counts().items()))


def device_function_counts() -> dict[str, int]:
    """How often each device function of the backend's device module was
    launched in this process, by name. With fallback_counts(), where the
    operators ran: on the device's own code or on the CPU."""
    return dict(sorted(_C._device_function_counts().items()))


def compile_path():
    """How torch.compile compiles the device's graphs in this process
    ("inductor" or "aot_eager"; None before the first): _compile.py."""
    from . import _compile

    return _compile.compile_path()


def host_addressable() -> bool:
    """Whether the host may address device memory, as the driver says
    (accDevAttrHostAddressable): True on the emulator, False on the remote
    driver and on most accelerators. Where it is False, CPU code never runs
    on device memory: emulated operators go through the CPU fallback with
    copies (features.host_copies) or are refused."""
    return bool(_C._host_addressable())


# ------------------------------------------------------------------ autocast

if _C._config["autocast"]:

    def get_amp_supported_dtype() -> list[torch.dtype]:
        """The dtypes torch.autocast("<device>") may cast to."""
        return [torch.float16, torch.bfloat16]

else:
    __all__.remove("get_amp_supported_dtype")


# -------------------------------------------------------------- registration


def _package_of_device(device_type: str) -> str:
    # The package behind another backend's device type: the torch.backends
    # entry point of that name, as accgen backends declare it.
    for entry_point in importlib.metadata.entry_points(group="torch.backends"):
        if entry_point.name == device_type:
            return entry_point.value.split(":")[0]
    return "an unknown package"


_clash_reported = False


def owns_device() -> bool:
    """Whether this backend holds PyTorch's PrivateUse1 device type in this
    process (Note [One PrivateUse1 backend per process]). When another
    backend loaded first, this one registered nothing and says so once."""
    global _clash_reported
    if _C._owns_device():
        return True
    if not _clash_reported:
        _clash_reported = True
        other = _C._device_taken_by()
        warnings.warn(
            f"{_PACKAGE} is not active: PyTorch takes one PrivateUse1 backend "
            f"per process, and '{other}' ({_package_of_device(other)}) "
            f"registered first. The two backends clash; to use "
            f"{_PACKAGE}, set TORCH_DEVICE_BACKEND_AUTOLOAD=0 and import "
            f"{_PACKAGE} explicitly before anything else loads a backend.",
            RuntimeWarning,
            stacklevel=3,
        )
    return False


def _register_distributed() -> None:
    # The device's c10d backend, "<device>ccl", becomes the device's default:
    # init_process_group() without a backend uses it on this device, and
    # "cpu:gloo,<device>:<device>ccl" names it. Its collectives run over the
    # collective interface; the Gloo implementation of that interface asks
    # for Gloo groups over the same ranks, made here on first use (Note
    # [Collectives over Gloo], runtime/src/GlooCollectives.cpp).
    import torch.distributed as dist

    if not dist.is_available():
        return
    name = _C._distributed_backend_name()
    if name in dist.Backend.backend_list:
        return

    def create(store: Any, rank: int, size: int, timeout: Any) -> Any:
        def host_group(index: int) -> Any:
            return dist.ProcessGroupGloo(
                dist.PrefixStore(f"host{index}/", store), rank, size, timeout
            )

        return _C._make_process_group(store, rank, size, timeout, host_group)

    dist.Backend.register_backend(name, create, devices=[_DEVICE_TYPE])
    if torch.torch_version.TorchVersion(torch.__version__) < (2, 14):
        _default_group_type_is_the_plugin(dist)
    _gloo_reaches_the_device(dist, name)


def _gloo_reaches_the_device(dist: ModuleType, name: str) -> None:
    # Note [Gloo on device tensors]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # init_process_group("gloo") gives the group a backend for each device
    # type of Backend.backend_capability["gloo"], which torch fixes to cpu
    # and cuda (BackendConfig in distributed_c10d.py): a collective on a
    # device tensor then raises "No backend type associated with device
    # type", where CUDA tensors work with Gloo. Gloo reaches this device
    # through the device's own backend, which runs Gloo over the device's
    # memory on its streams; so a group asked for "gloo" gets it for the
    # device as "cpu:gloo,<device>:<device>ccl" would, in this one place.
    # Applied while torch's Gloo capability leaves the device out;
    # tests/python/test_distributed.py (test_gloo_workaround_is_still_needed)
    # shows it still does.
    config = dist.distributed_c10d.BackendConfig
    if _DEVICE_TYPE in dist.Backend.backend_capability.get("gloo", ()):
        return
    original = config.__init__
    if getattr(original, "__wrapped__", None) is not None:
        return  # a second import

    def __init__(self: Any, backend: Any) -> None:
        original(self, backend)
        if str(backend).lower() == "gloo":
            self.device_backend_map.setdefault(_DEVICE_TYPE, dist.Backend(name))

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    config.__init__ = __init__


def _default_group_type_is_the_plugin(dist: ModuleType) -> None:
    # Note [The default backend of a group in torch 2.13]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # For init_process_group() without a backend, torch 2.13's
    # _new_process_group_helper sets the group's default backend type to
    # GLOO unless NCCL is among its backends ("Currently when backend is
    # UNDEFINED ..." in distributed_c10d.py), even when the device's backend
    # is a plugin and there is no Gloo backend in the group. C++ users of the
    # default backend then fail: DDP raises "Could not find backend type 1
    # for Process Group". Once the group is made, its default becomes the
    # plugin when it has no backend of the type it was given.
    # tests/python/test_distributed.py (test_default_group_workaround_is_
    # still_needed) runs DDP without this and shows it fails on the pinned
    # torch.
    from torch.distributed import distributed_c10d as c10d

    original = c10d._new_process_group_helper

    @functools.wraps(original)
    def new_process_group_helper(*args: Any, **kwargs: Any) -> Any:
        pg, store = original(*args, **kwargs)
        if isinstance(pg, dist.ProcessGroup) and pg._get_backend_name() == "gloo":
            try:
                pg._get_backend(torch.device(_DEVICE_TYPE))
            except RuntimeError:
                return pg, store  # the device is not in this group
            try:
                pg._get_backend(torch.device("cpu"))  # Gloo's device
            except RuntimeError:
                pg._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)
        return pg, store

    c10d._new_process_group_helper = new_process_group_helper


# --8<-- [start:register]
def register(package: ModuleType) -> None:
    """Makes `package` (the backend's Python package, which re-exports this
    module) torch.<device>, with Tensor.<device>() and its counterparts.
    Does nothing but warn once when another backend holds the device type,
    and the libraries that select the device by name then say why not."""
    from . import integrations

    integrations.install()
    if not owns_device():
        return
    torch.utils.rename_privateuse1_backend(_DEVICE_TYPE)
    # A second import (importlib.reload) must not register anything again.
    if not hasattr(torch, _DEVICE_TYPE):
        torch._register_device_module(_DEVICE_TYPE, package)
    if not hasattr(torch.Tensor, "is_" + _DEVICE_TYPE):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_storage=True
        )
    from . import _compile, memory  # noqa: F401 (torch.<device>.memory)

    _compile.install()
    _register_distributed()
    # Autocompare (_autocompare.py) only when asked for: off, it is not
    # even imported.
    autocompare = os.environ.get(f"{_C._config['env_prefix']}_AUTOCOMPARE", "")
    if autocompare.strip().lower() not in ("", "0"):
        from . import _autocompare

        _autocompare.install(_DEVICE_TYPE, autocompare.strip().lower())
    # Note [Exit with device work in flight] (runtime/src/emulate/Launch.cpp).
    atexit.register(_C._begin_exit)
    # Note [Collectives at exit] (accgen/runtime/Distributed.h); atexit runs
    # this one first.
    atexit.register(_C._drain_collectives)
# --8<-- [end:register]
