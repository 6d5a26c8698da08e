"""torch.compile on an accgen device: Dynamo's device interface and Inductor's
backend, registered for the device.

This file is accgen's runtime, not generated: each backend's wheel carries it
as ``<package>/_compile.py``. The device module calls ``install()`` when the
package registers the device.

How a device graph compiles (Note [Compiled kernels on the device]), where
the host addresses device memory (the emulator): Inductor
lowers it with its C++ CPU code generation (``CppScheduling``), since the
emulated device's memory is host memory. The Python wrapper it generates calls
each fused C++ kernel through the backend's ``_C._launch_compiled``, which runs
the kernel as device work: on the current stream, after the work queued there,
with access to exactly the allocations of its tensor arguments, while the
calling thread waits without the GIL. Extern kernels (``mm``, convolution,
attention) and fallbacks are ordinary operator calls on the device.

Where the host cannot address device memory (the remote driver, most
accelerators), Inductor's CPU code cannot run on it: AOT Autograd traces the
graph to ATen operators and they run through the device's own kernels and
fallbacks (compile_path() says which way a process compiled).

What a vendor changes for real hardware is ``Scheduling`` and
``WrapperCodegen`` below: their own kernel code generation and the wrapper
that launches its kernels (docs/compile.md).
"""

import operator
from typing import Any, Callable, Optional

import torch

from . import _C
from . import _device as _dev
from ._after_import import after_import

_DEVICE_TYPE: str = _C._config["device"]
_PACKAGE: str = _C._config["package"]
_LAUNCH = "_device_launch"
_EMPTY = "_device_empty_strided"

# Set once the registration ran in this process.
_registered = False


class CompileUnsupportedError(RuntimeError):
    """A torch.compile mode the device cannot run."""


def _unsupported(what: str, why: str) -> CompileUnsupportedError:
    return CompileUnsupportedError(
        f"{what} is not supported on the {_DEVICE_TYPE} device: {why} "
        f"Compile with the default mode and the Python wrapper instead "
        f"(torch.compile(model) or mode='max-autotune-no-cudagraphs')."
    )


def _cpp_wrapper_unsupported(aot: bool) -> CompileUnsupportedError:
    # AOTInductor and cpp_wrapper: both are Inductor's C++ wrapper.
    if aot:
        return _unsupported(
            "AOTInductor", "its C++ runtime knows only the devices built into "
            "PyTorch (torch._inductor.codegen.cpp_utils.DEVICE_TO_ATEN).")
    return _unsupported(
        "cpp_wrapper", "Inductor's C++ wrapper knows only the devices built into "
        "PyTorch (torch._inductor.codegen.cpp_utils.DEVICE_TO_ATEN).")


# ------------------------------------------------------------------- Dynamo


def _register_device_interface(device_interface: Any) -> None:
    # `device_interface` is the module torch._dynamo.device_interface.
    if not _dev.owns_device():
        return

    class Interface(device_interface.DeviceInterface):
        """The device as Dynamo and Inductor see it (torch._dynamo.device_interface)."""

        device = _dev.device
        # Dynamo captures streams and events only as torch.Stream / torch.Event
        # subclasses; the device's events are plain torch.Event objects.
        Event = torch.Event
        Stream = _dev.Stream

        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                _dev.set_device(device)

            @staticmethod
            def current_device() -> int:
                return _dev.current_device()

            @staticmethod
            def get_device_properties(device: Any = None) -> Any:
                return _dev.get_device_properties(device)

        current_device = staticmethod(_dev.current_device)
        set_device = staticmethod(_dev.set_device)
        device_count = staticmethod(_dev.device_count)
        is_available = staticmethod(_dev.is_available)
        stream = staticmethod(_dev.stream)
        current_stream = staticmethod(_dev.current_stream)
        set_stream = staticmethod(_dev.set_stream)
        synchronize = staticmethod(_dev.synchronize)
        get_device_properties = staticmethod(_dev.get_device_properties)
        memory_allocated = staticmethod(_dev.memory_allocated)

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return _C._exchange_device(device)

        @staticmethod
        def exchange_device(device: int) -> int:
            return _C._exchange_device(device)

        @staticmethod
        def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
            _C._set_stream(stream_id, device_index, device_type)

        get_raw_stream = staticmethod(get_raw_stream)

        @staticmethod
        def get_compute_capability(device: Any = None) -> str:
            major, minor = _dev.get_device_capability(device)
            return f"{major}{minor}"

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return True

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return False

    Interface.__name__ = Interface.__qualname__ = f"{_DEVICE_TYPE.capitalize()}Interface"
    device_interface.register_interface_for_device(_DEVICE_TYPE, Interface)


# ----------------------------------------------------------------- Inductor


def _make_inductor_classes() -> tuple[Any, ...]:
    from torch._inductor import config
    from torch._inductor.codegen.common import DeviceOpOverrides
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.wrapper import (
        PythonWrapperCodegen,
        SubgraphPythonWrapperCodegen,
    )
    from torch._inductor.custom_graph_pass import (
        CustomGraphModulePass,
        get_hash_for_files,
    )
    from torch._inductor.virtualized import V

    module = f"torch.{_DEVICE_TYPE}"

    class OpOverrides(DeviceOpOverrides):
        """Source text the Python wrapper emits for device operations."""

        def import_get_raw_stream_as(self, name: str) -> str:
            return f"from {_PACKAGE}._compile import get_raw_stream as {name}"

        def set_device(self, device_idx: int) -> str:
            return f"{module}.set_device({device_idx})"

        def synchronize(self) -> str:
            return f"{module}.synchronize()"

        def device_guard(self, device_idx: int) -> str:
            return f"{module}.device({device_idx})"

        def current_stream(self) -> str:
            return f"{module}.current_stream()"

    class KernelCalls:
        """Device kernel calls and buffer allocations of the graph's wrapper
        and its subgraphs' (Note [Compiled kernels on the device])."""

        def _import_from_C(self, name: str, alias: str) -> None:
            # Into the imports of the outermost wrapper, whose module holds
            # the code of its subgraphs too.
            root = self
            while getattr(root, "parent_wrapper", None) is not None:
                root = root.parent_wrapper
            line = f"from {_PACKAGE}._C import {name} as {alias}"
            if not root.imports.contains(line):
                root.imports.writeline(line)

        def _generate_kernel_call_helper(self, kernel_name: str, call_args: Any, **kwargs: Any) -> None:
            device = kwargs.get("device") or V.graph.get_current_device_or_throw()
            if kwargs.get("triton", True) or device.type != _DEVICE_TYPE:
                super()._generate_kernel_call_helper(kernel_name, call_args, **kwargs)
                return
            self._import_from_C("_launch_compiled", _LAUNCH)
            self.writeline(f"{_LAUNCH}({', '.join([kernel_name, *call_args])}){self.ending}")

        def make_allocation(self, name: str, device: torch.device, dtype: torch.dtype, shape: Any,
                            stride: Any, allocation_shape: Any = None, is_pinned: bool = False) -> str:
            # Buffers come from the device's allocator without a dispatcher
            # call, as Inductor's own empty_strided_cpu/_cuda do.
            if device.type != _DEVICE_TYPE or config.test_configs.track_memory_lifecycle:
                return super().make_allocation(name, device, dtype, shape, stride,
                                               allocation_shape, is_pinned)
            self._import_from_C("_empty_strided", _EMPTY)
            shape_text = self.codegen_python_shape_tuple(shape)
            allocated = self.codegen_python_shape_tuple(
                shape if allocation_shape is None else allocation_shape)
            stride_text = self.codegen_python_shape_tuple(stride)
            index = -1 if device.index is None else device.index
            line = f"{name} = {_EMPTY}({allocated}, {stride_text}, {dtype}, {index})"
            if shape_text != allocated:
                line += f".as_strided({shape_text}, {stride_text})"
            return line

    class SubgraphWrapperCodegen(KernelCalls, SubgraphPythonWrapperCodegen):
        pass

    class WrapperCodegen(KernelCalls, PythonWrapperCodegen):
        """Inductor's Python wrapper for a device graph."""

        @staticmethod
        def create(is_subgraph: bool, subgraph_name: Optional[str], parent_wrapper: Any,
                   partition_signatures: Any = None) -> Any:
            if is_subgraph:
                return SubgraphWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
            return WrapperCodegen()

    class CppWrapperCodegen:
        """Stands for Inductor's C++ wrapper, which the device does not have."""

        @staticmethod
        def create(*args: Any, **kwargs: Any) -> Any:
            raise _cpp_wrapper_unsupported(aot=bool(V.aot_compilation))

    class CodegenIdentity(CustomGraphModulePass):
        """Inductor's caches key compiled graphs by Inductor's code and
        settings, not by this backend's code generation: a graph compiled by
        an earlier build of the backend would come back from the cache with
        that build's code. This pass changes nothing; its uuid, part of every
        cache key, is the hash of the backend's code generation and bindings."""

        def __call__(self, gm: torch.fx.GraphModule) -> None:
            pass

        def uuid(self) -> bytes:
            return get_hash_for_files((__file__, _C.__file__))

    return CppScheduling, WrapperCodegen, CppWrapperCodegen, OpOverrides, CodegenIdentity


def get_raw_stream(device_index: int) -> int:
    """The id of the current stream of `device_index` (what Inductor's
    generated code calls a raw stream)."""
    return _dev.current_stream(device_index).stream_id


# ------------------------------------------------- workarounds of torch's Inductor

# --8<-- [start:torch-workarounds-note]
# Note [Inductor on a PrivateUse1 device]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Two places of Inductor assume that a device other than the CPU, MPS, XPU or
# TPU generates Triton code, which breaks C++ code generation for any other
# device: in torch 2.13, 2.14 and 2.15 alike. Each workaround below is a
# function of TORCH_WORKAROUNDS, mapped to the first torch release that no
# longer needs it (None while every supported release does; a release newer
# than the newest tested gets it too). register() applies those the running
# torch needs. tests/python/test_compile.py
# (test_torch_workarounds_are_still_needed) leaves each one out in turn and
# shows that compiling fails without it, on every release of the matrix
# (scripts/test_releases.sh); a release that compiles without one says so
# there, and its entry here gets that release.
# --8<-- [end:torch-workarounds-note]


def _device_generates_cpp() -> None:
    # torch._inductor.utils.get_current_backend returns config.cuda_backend
    # ("triton") for every other device, so CSE and indexing apply Triton's
    # dtype rules to C++ kernels (AssertionError in CppVecKernel.arange and
    # in indirect_assert). The device answers "cpp". Four modules import the
    # function by name; each gets the wrapper.
    import torch._inductor.codegen.common as common
    import torch._inductor.kernel.mm_common as mm_common
    import torch._inductor.scheduler as scheduler
    import torch._inductor.utils as utils

    original = utils.get_current_backend

    def get_current_backend(device_type: Optional[str] = None) -> str:
        if device_type is None:
            from torch._inductor.virtualized import V

            device_type = V.graph.get_current_device_or_throw().type
        if device_type == _DEVICE_TYPE:
            return "cpp"
        return original(device_type)

    for module in (utils, common, scheduler, mm_common):
        module.get_current_backend = get_current_backend


def _device_nodes_schedule_as_cpu() -> None:
    # torch._inductor.scheduler.BaseSchedulerNode.is_cpu exempts CPU nodes
    # from fusion heuristics that hold only for Triton's (numel, rnumel)
    # groups; with C++ groups on the device they fail (TypeError in
    # Scheduler._try_reindex_pointwise_for_reduction). The device's nodes are
    # scheduled by the CPU's C++ scheduling, so they count as CPU nodes.
    import torch._inductor.scheduler as scheduler

    def is_cpu(node: Any) -> bool:
        device = node.get_device()
        return device is not None and device.type in ("cpu", _DEVICE_TYPE)

    scheduler.BaseSchedulerNode.is_cpu = is_cpu


TORCH_WORKAROUNDS: dict[Callable[[], None], Optional[tuple[int, int]]] = {
    _device_generates_cpp: None,
    _device_nodes_schedule_as_cpu: None,
}


def needed_workarounds() -> list[Callable[[], None]]:
    """The workarounds of TORCH_WORKAROUNDS the running torch needs."""
    version = torch.torch_version.TorchVersion(torch.__version__)
    return [workaround for workaround, fixed_in in TORCH_WORKAROUNDS.items()
            if fixed_in is None or version < fixed_in]


def _on_device(graph: Any, example_inputs: Any) -> bool:
    # Whether a graph Inductor compiles touches the device: an input on it, or
    # a value made on it inside the graph (a factory call).
    for value in example_inputs:
        if isinstance(value, torch.Tensor) and value.device.type == _DEVICE_TYPE:
            return True
    for node in getattr(graph, "graph", graph).nodes:
        for key in ("val", "example_value"):
            value = node.meta.get(key)
            if isinstance(value, torch.Tensor) and value.device.type == _DEVICE_TYPE:
                return True
    return False


# Which way device graphs compile in this process (compile_path()).
_path: Optional[str] = None


def _note_path(path: str) -> None:
    global _path
    if _path != path:
        _path = path
        import logging

        logging.getLogger(f"{_PACKAGE}.compile").info(
            "torch.compile on %s: %s", _DEVICE_TYPE, _PATHS[path])


_PATHS = {
    "inductor": "Inductor's C++ code generation, its kernels launched as "
                "device work (the host addresses device memory)",
    "aot_eager": "AOT Autograd graphs run through the device's own operators "
                 "(the host cannot address device memory, so Inductor's CPU "
                 "code cannot run on it)",
}


def compile_path() -> Optional[str]:
    """How torch.compile compiled the device's graphs in this process:
    "inductor" (Inductor's C++ code generation; the emulator), "aot_eager"
    (graphs traced by AOT Autograd and run through the device's operators,
    where the host cannot address device memory), or None before the first
    device graph."""
    return _path


def _without_host_access(model: Any, example_inputs: Any) -> Any:
    # Note [Host access] (runtime/src/Driver.cpp): Inductor's C++ kernels
    # would compute on device memory from the host. The graph is traced to
    # ATen operators with their decompositions, as Inductor's would be, and
    # runs through the device's own kernels and fallbacks.
    from torch._dynamo.backends.registry import lookup_backend

    _note_path("aot_eager")
    return lookup_backend("aot_eager")(model, example_inputs)


def _wrap_compile_fx(compile_fx_module: Any) -> None:
    # Device graphs compile with settings of their own, checked and applied in
    # one place: Inductor's entry point, which torch.compile, the Dynamo
    # backend "inductor" and AOTInductor all look up as a module attribute
    # when they compile.
    original = compile_fx_module.compile_fx
    if getattr(original, "__wrapped__", None) is not None:
        return

    def compile_fx(model_: Any, example_inputs_: Any, *args: Any, **kwargs: Any) -> Any:
        register()
        if not _on_device(model_, example_inputs_):
            return original(model_, example_inputs_, *args, **kwargs)
        from torch._inductor import config
        from torch._inductor.virtualized import V

        patches = kwargs.get("config_patches") or {}

        def setting(name: str) -> Any:
            return patches[name] if name in patches else operator.attrgetter(name)(config)

        if not _dev.host_addressable():
            return _without_host_access(model_, example_inputs_)
        _note_path("inductor")
        if V.aot_compilation:
            raise _cpp_wrapper_unsupported(aot=True)
        if setting("triton.cudagraphs"):
            raise _unsupported(
                "mode='reduce-overhead' (CUDA graphs)",
                "torch's Inductor builds its graphs on torch.cuda.CUDAGraph and "
                "skips devices other than CUDA (docs/compile.md); eager code "
                "captures with torch.accelerator.Graph.")
        if setting("cpp_wrapper"):
            raise _cpp_wrapper_unsupported(aot=False)
        # Random operators run as the device's own operators, drawing from its
        # generator, so a seeded compiled model draws what eager draws.
        with config.patch(fallback_random=True):
            return original(model_, example_inputs_, *args, **kwargs)

    compile_fx.__wrapped__ = original  # type: ignore[attr-defined]
    compile_fx_module.compile_fx = compile_fx


# --8<-- [start:inductor-registration]
def register() -> None:
    """Registers the device's backend with Inductor, once per process; the
    first compilation calls it."""
    global _registered
    if _registered or not _dev.owns_device():
        return
    _registered = True
    from torch._inductor.codegen.common import (
        register_backend_for_device,
        register_device_op_overrides,
    )

    scheduling, wrapper, cpp_wrapper, op_overrides, identity = _make_inductor_classes()
    register_device_op_overrides(_DEVICE_TYPE, op_overrides())
    register_backend_for_device(_DEVICE_TYPE, scheduling, wrapper, cpp_wrapper,
                                device_custom_pass=identity())
    for workaround in needed_workarounds():
        workaround()
# --8<-- [end:inductor-registration]


def install() -> None:
    """Registers the device with Dynamo and Inductor as they load.

    Note [Registering with torch.compile lazily]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    Dynamo and Inductor take seconds to import, which `import torch` must not pay for a device. So
    each registration happens when the module it needs has loaded: now if
    it is loaded, else through a one-time import hook. Dynamo's device
    interface is registered as torch._dynamo.device_interface loads.
    Every compilation goes through torch._inductor.compile_fx.compile_fx,
    which its callers look up when they compile; the device wraps it as
    that module loads, and the wrapper registers the Inductor backend on
    its first call, when Dynamo and Inductor are fully loaded."""
    after_import({
        "torch._dynamo.device_interface": _register_device_interface,
        "torch._inductor.compile_fx": _wrap_compile_fx,
    })
