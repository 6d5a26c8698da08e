"""The device as DeepSpeed's accelerator.

DeepSpeed reaches its device through one object, ``get_accelerator()``, an
instance of ``deepspeed.accelerator.abstract_accelerator.DeepSpeedAccelerator``;
it picks the class from a fixed list of names, and ``set_accelerator()``
takes any other. ``Accelerator`` below implements every method of that class
through ``torch.<device>`` and ``torch.accelerator``, and ``select_on_load``
makes it DeepSpeed's accelerator as DeepSpeed loads (``integrations.install``):

- ``DS_ACCELERATOR=<device>`` selects it, in every process the ``deepspeed``
  launcher starts as in a plain script;
- with ``DS_ACCELERATOR`` unset it is selected where the device is there,
  as DeepSpeed selects the devices it knows; any other ``DS_ACCELERATOR``
  (``cpu``, ``cuda``) keeps DeepSpeed's own choice.

DeepSpeed's fused kernels (its op builders: FusedAdam, CPUAdam, the
quantizers, the inference kernels) are CUDA and CPU code and do not exist for
the device: each builder says so when it is loaded, and a training
configuration uses PyTorch's optimizers (``"torch_adam": true``, or an
optimizer passed to ``deepspeed.initialize``).
"""

import abc
import contextlib
import functools
from typing import Any, Optional

import torch

from .. import _device
from . import (
    DEVICE,
    ENV_PREFIX,
    IntegrationError,
    declared_dtypes,
    device_usable,
    distributed_backend,
    require_device,
    selected_by_environment,
)

_module = getattr(torch, DEVICE, _device)


# --8<-- [start:op-builders]
@functools.cache
def _no_kernels_builder(class_name: str) -> type:
    # One OpBuilder class per DeepSpeed builder name: DeepSpeed looks every
    # builder up by name when deepspeed.ops loads, so each must exist; each
    # fails, with the reason, only when something loads it.
    from deepspeed.ops.op_builder.builder import OpBuilder

    def load(self: Any, verbose: bool = True) -> Any:
        raise IntegrationError(
            f"DeepSpeed's {class_name} has no kernels for the {DEVICE} device: "
            f"DeepSpeed's fused ops are CUDA and CPU code. Use PyTorch's own "
            f"operators instead: for the optimizer, \"torch_adam\": true in "
            f"its params, or an optimizer passed to deepspeed.initialize "
            f"(docs/guide/deepspeed.md)."
        )

    return type(class_name, (OpBuilder,), {
        "BUILD_VAR": f"DS_BUILD_{class_name.upper()}",
        "NAME": f"{DEVICE}_{class_name}",
        "__init__": lambda self: OpBuilder.__init__(self, name=self.NAME),
        "absolute_name": lambda self: f"deepspeed.ops.{self.NAME}",
        "sources": lambda self: [],
        "is_compatible": lambda self, verbose=False: False,
        "load": load,
        "jit_load": load,
    })
# --8<-- [end:op-builders]


_TENSOR_TYPES = {
    "BFloat16Tensor": torch.bfloat16,
    "ByteTensor": torch.uint8,
    "DoubleTensor": torch.float64,
    "FloatTensor": torch.float32,
    "HalfTensor": torch.float16,
    "IntTensor": torch.int32,
    "LongTensor": torch.int64,
}


def _typed_tensor(accelerator: Any, dtype: torch.dtype) -> Any:
    return functools.partial(torch.tensor, dtype=dtype, device=DEVICE)


@functools.cache
def accelerator_class() -> type:
    """The DeepSpeedAccelerator subclass of this device (DeepSpeed is
    imported when this is first called)."""
    from deepspeed.accelerator.abstract_accelerator import DeepSpeedAccelerator

    class Accelerator(DeepSpeedAccelerator):
        __doc__ = f"The {DEVICE} device as DeepSpeed's accelerator."

        def __init__(self) -> None:
            super().__init__()
            self._name = DEVICE
            self._communication_backend_name = distributed_backend()
            self._compile_backend = "inductor"
            self._ranges: list[Any] = []
            self._capture_streams: dict[int, Any] = {}

        # Work is queued on streams, as on CUDA: DeepSpeed must synchronize
        # where results are read and time with events.
        def is_synchronized_device(self) -> bool:
            return False

        def use_host_timers(self) -> bool:
            return self.is_synchronized_device()

        def resolves_data_dependency(self) -> bool:
            return self.is_synchronized_device()

        def handles_memory_backpressure(self) -> bool:
            return self.is_synchronized_device()

        # Devices
        def device_name(self, device_index: Optional[int] = None) -> str:
            return DEVICE if device_index is None else f"{DEVICE}:{device_index}"

        def device(self, device_index: Optional[int] = None) -> Any:
            return _module.device(device_index)

        def set_device(self, device_index: int) -> None:
            _module.set_device(device_index)

        def current_device(self) -> int:
            return _module.current_device()

        def current_device_name(self) -> str:
            return f"{DEVICE}:{_module.current_device()}"

        def device_count(self) -> int:
            return _module.device_count()

        def synchronize(self, device_index: Optional[int] = None) -> None:
            _module.synchronize(device_index)

        def is_available(self) -> bool:
            return _module.is_available()

        def lazy_call(self, callback: Any) -> None:
            _device._lazy_call(callback)

        # Random numbers
        def random(self) -> Any:
            return torch.random

        def set_rng_state(self, new_state: torch.Tensor,
                          device_index: Optional[int] = None) -> None:
            if device_index is None:
                _module.set_rng_state(new_state)
            else:
                _module.set_rng_state(new_state, device_index)

        def get_rng_state(self, device_index: Optional[int] = None) -> torch.Tensor:
            if device_index is None:
                return _module.get_rng_state()
            return _module.get_rng_state(device_index)

        def manual_seed(self, seed: int) -> None:
            _module.manual_seed(seed)

        def manual_seed_all(self, seed: int) -> None:
            _module.manual_seed_all(seed)

        def initial_seed(self) -> int:
            return _module.initial_seed()

        def default_generator(self, device_index: int) -> torch.Generator:
            _module.init()
            return _module.default_generators[device_index]

        # Streams and events
        @property
        def Stream(self) -> type:  # noqa: N802 (DeepSpeed's name)
            return _module.Stream

        def stream(self, stream: Any) -> Any:
            return _module.stream(stream)

        def current_stream(self, device_index: Optional[int] = None) -> Any:
            return _module.current_stream(device_index)

        def default_stream(self, device_index: Optional[int] = None) -> Any:
            return _module.default_stream(device_index)

        @property
        def Event(self) -> type:  # noqa: N802 (DeepSpeed's name)
            return _module.Event

        # Memory
        def empty_cache(self) -> None:
            _module.empty_cache()

        def memory_allocated(self, device_index: Optional[int] = None) -> int:
            return _module.memory_allocated(device_index)

        def max_memory_allocated(self, device_index: Optional[int] = None) -> int:
            return _module.max_memory_allocated(device_index)

        def reset_max_memory_allocated(self, device_index: Optional[int] = None) -> None:
            _module.reset_peak_memory_stats(device_index)

        def memory_cached(self, device_index: Optional[int] = None) -> int:
            return _module.memory_reserved(device_index)

        def max_memory_cached(self, device_index: Optional[int] = None) -> int:
            return _module.max_memory_reserved(device_index)

        def reset_max_memory_cached(self, device_index: Optional[int] = None) -> None:
            _module.reset_peak_memory_stats(device_index)

        def memory_stats(self, device_index: Optional[int] = None) -> Any:
            return _module.memory_stats(device_index)

        def reset_peak_memory_stats(self, device_index: Optional[int] = None) -> None:
            _module.reset_peak_memory_stats(device_index)

        def memory_reserved(self, device_index: Optional[int] = None) -> int:
            return _module.memory_reserved(device_index)

        def max_memory_reserved(self, device_index: Optional[int] = None) -> int:
            return _module.max_memory_reserved(device_index)

        def total_memory(self, device_index: Optional[int] = None) -> int:
            return _module.get_device_properties(device_index).total_memory

        def available_memory(self, device_index: Optional[int] = None) -> int:
            return _module.mem_get_info(device_index)[0]

        # Data types: float32 and what the specs declare for autocast.
        def is_bf16_supported(self) -> bool:
            return torch.bfloat16 in declared_dtypes()

        def is_fp16_supported(self) -> bool:
            return torch.float16 in declared_dtypes()

        def is_fp64_supported(self) -> bool:
            return True

        def supported_dtypes(self) -> list[torch.dtype]:
            return declared_dtypes()

        # Profiler ranges: torch.profiler's record_function, as CUDA's NVTX.
        def range_push(self, msg: str, domain: Any = None, category: Any = None) -> None:
            scope = torch.autograd.profiler.record_function(msg)
            scope.__enter__()
            self._ranges.append(scope)

        def range_pop(self, domain: Any = None) -> None:
            if self._ranges:
                self._ranges.pop().__exit__(None, None, None)

        # Communication and compilation
        def communication_backend_name(self) -> str:
            return self._communication_backend_name

        def is_triton_supported(self) -> bool:
            return False

        def get_compile_backend(self) -> str:
            return self._compile_backend

        def set_compile_backend(self, backend: str) -> None:
            supported = torch._dynamo.list_backends(exclude_tags=())
            if backend not in supported:
                raise ValueError(
                    f"{backend} is not a torch.compile backend on the {DEVICE} "
                    f"device; the backends are {supported}")
            self._compile_backend = backend

        # Graphs: torch.accelerator.Graph over the device's stream capture.
        def create_graph(self) -> Any:
            return torch.accelerator.Graph()

        def capture_to_graph(self, graph: Any, pool: Any = None, stream: Any = None) -> Any:
            if pool is not None and pool != graph.pool():
                raise IntegrationError(
                    f"a graph on the {DEVICE} device takes its memory pool when "
                    f"it is made: torch.accelerator.Graph(pool=...)")
            # As torch.cuda.graph: the work queued before is done, and the
            # capture runs on a side stream (never the default stream).
            if stream is None:
                index = _module.current_device()
                stream = self._capture_streams.get(index)
                if stream is None:
                    stream = self._capture_streams[index] = _module.Stream()
            _module.synchronize()
            scope = contextlib.ExitStack()
            scope.enter_context(_module.stream(stream))
            scope.enter_context(graph)
            return scope

        def replay_graph(self, graph: Any) -> None:
            graph.replay()

        def on_accelerator(self, tensor: torch.Tensor) -> bool:
            return tensor.device.type == DEVICE

        # Pinned host memory: the device's own (features.pinned_memory), or
        # pageable memory, as DeepSpeed's CPU accelerator keeps it.
        _torch_pins_host_memory = hasattr(_device, "empty_host_cache")

        def _torch_pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
            return tensor.pin_memory() if self._torch_pins_host_memory else tensor

        def _torch_empty_pinned(self, tensor: torch.Tensor, shape: Any) -> torch.Tensor:
            return tensor.new_empty(shape, pin_memory=self._torch_pins_host_memory)

        # Op builders: none has kernels for the device.
        def op_builder_dir(self) -> str:
            return "deepspeed.ops.op_builder"

        def create_op_builder(self, class_name: str) -> Any:
            return self.get_op_builder(class_name)()

        def get_op_builder(self, class_name: str) -> type:
            return _no_kernels_builder(class_name)

        def build_extension(self) -> Any:
            from torch.utils.cpp_extension import BuildExtension

            return BuildExtension

        # The launcher: what it passes on to the processes it starts.
        def export_envs(self) -> list[str]:
            return [f"{ENV_PREFIX}_", "ACCGEN_"]

        def visible_devices_envs(self) -> list[str]:
            return [f"{ENV_PREFIX}_VISIBLE_DEVICES"]

        def set_visible_devices_envs(self, current_env: dict, local_accelerator_ids: list) -> None:
            for name in self.visible_devices_envs():
                current_env[name] = ",".join(map(str, local_accelerator_ids))

    # DeepSpeed's tensor types (abstract properties): the dtype's
    # torch.tensor on the device.
    for name, dtype in _TENSOR_TYPES.items():
        setattr(Accelerator, name, property(functools.partial(_typed_tensor, dtype=dtype)))
    abc.update_abstractmethods(Accelerator)
    Accelerator.__name__ = Accelerator.__qualname__ = f"{DEVICE.upper()}_Accelerator"
    return Accelerator


def accelerator() -> Any:
    """A new DeepSpeed accelerator of this device; hand it to
    ``deepspeed.accelerator.set_accelerator`` to select it by hand."""
    return accelerator_class()()


# --8<-- [start:select-on-load]
def select_on_load(real_accelerator: Any) -> None:
    """Makes the device DeepSpeed's accelerator as DeepSpeed's
    ``deepspeed.accelerator.real_accelerator`` loads, when
    ``DS_ACCELERATOR`` names the device or is unset and the device is there."""
    import os

    if selected_by_environment("DS_ACCELERATOR"):
        require_device(f"DS_ACCELERATOR={os.environ['DS_ACCELERATOR']}")
    elif "DS_ACCELERATOR" in os.environ or not device_usable():
        return
    real_accelerator.set_accelerator(accelerator())
# --8<-- [end:select-on-load]
