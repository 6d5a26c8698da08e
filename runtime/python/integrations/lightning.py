"""The device as a Lightning accelerator: ``Trainer(accelerator="<device>")``.

Lightning (the ``lightning`` package and the standalone ``pytorch_lightning``
and ``lightning_fabric``) keeps its accelerators in a registry filled as its
``accelerators`` module loads; ``integrations.install`` registers the
device's ``Accelerator`` there, for the Trainer and for Fabric, so that
``Trainer(accelerator="<device>", devices=N)`` and
``Fabric(accelerator="<device>")`` find it by name. With more than one device
Lightning's ``ddp`` strategy runs over the device's c10d backend, which
torch.distributed holds as the device's default.
"""

from typing import Any, Union

import torch

from .. import _device
from . import DEVICE, PACKAGE, device_usable, require_device

_module = getattr(torch, DEVICE, _device)

_Devices = Union[int, str, list, tuple, None]


def _misconfiguration(message: str) -> Exception:
    try:
        from lightning.fabric.utilities.exceptions import MisconfigurationException
    except ImportError:
        from lightning_fabric.utilities.exceptions import MisconfigurationException
    return MisconfigurationException(message)


def parse_devices(devices: _Devices) -> list[int]:
    """The device indices Lightning's `devices` asks for: a count (``2``,
    ``"2"``), all of them (``-1``, ``"-1"``, ``"auto"``), or the indices
    themselves (``[0, 1]``, ``"0,1"``)."""
    count = _module.device_count()
    if devices is None or devices == "auto" or devices in (-1, "-1"):
        indices = list(range(count))
    elif isinstance(devices, str) and "," in devices:
        indices = [int(part) for part in devices.split(",") if part.strip()]
    elif isinstance(devices, (str, int)) and not isinstance(devices, bool):
        try:
            wanted = int(devices)
        except ValueError:
            raise _misconfiguration(
                f"devices={devices!r} is not a number of {DEVICE} devices, "
                f"a list of their indices or 'auto'") from None
        if wanted < 1:
            raise _misconfiguration(
                f"devices={devices!r} asks for no {DEVICE} device; ask for "
                f"1 to {count}, -1 or 'auto'")
        if wanted > count:
            raise _misconfiguration(
                f"devices={devices!r} asks for {wanted} {DEVICE} devices, but "
                f"this machine has {count} (torch.{DEVICE}.device_count())")
        indices = list(range(wanted))
    else:
        indices = [int(index) for index in devices]
    for index in indices:
        if not 0 <= index < count:
            raise _misconfiguration(
                f"devices={devices!r} names {DEVICE}:{index}, but this machine "
                f"has {count} {DEVICE} devices (torch.{DEVICE}.device_count())")
    if len(set(indices)) != len(indices) or not indices:
        raise _misconfiguration(
            f"devices={devices!r} must name distinct {DEVICE} devices")
    return indices


class _Methods:
    # The accelerator's methods, shared by the Trainer's and Fabric's class.

    def setup_device(self, device: torch.device) -> None:
        if device.type != DEVICE:
            raise _misconfiguration(f"Device should be {DEVICE}, got {device} instead.")
        require_device(f"Lightning's accelerator='{DEVICE}'")
        _module.set_device(device.index or 0)

    def teardown(self) -> None:
        _module.empty_cache()

    def setup(self, trainer: Any) -> None:
        # The Trainer calls this before its strategy wraps the model.
        _ddp_without_cuda_streams(trainer.strategy)

    @staticmethod
    def parse_devices(devices: _Devices) -> list[int]:
        return parse_devices(devices)

    @staticmethod
    def get_parallel_devices(devices: _Devices) -> list[torch.device]:
        if not isinstance(devices, list):
            devices = parse_devices(devices)
        return [torch.device(DEVICE, index) for index in devices]

    @staticmethod
    def auto_device_count() -> int:
        return _module.device_count()

    @staticmethod
    def is_available() -> bool:
        return device_usable()

    @staticmethod
    def name() -> str:
        return DEVICE

    def get_device_stats(self, device: Any) -> dict[str, Any]:
        return dict(_module.memory_stats(device))

    @classmethod
    def register_accelerators(cls, accelerator_registry: Any) -> None:
        accelerator_registry.register(
            DEVICE, cls, description=f"the {DEVICE} device ({PACKAGE})", override=True)


# --8<-- [start:ddp]
def _ddp_without_cuda_streams(strategy: Any) -> None:
    # Note [Lightning's DDP makes a CUDA stream]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Lightning 2.6's DDPStrategy._setup_model wraps the model in
    # DistributedDataParallel inside torch.cuda.stream(torch.cuda.Stream())
    # whenever it passes device_ids, which it does for every device but the
    # CPU: on the device that raises "torch.cuda.Stream requires CUDA
    # support". The strategy passes no device_ids for the device instead:
    # DDP takes a module on one device without them, and Lightning moves the
    # batches to the device itself. tests/python/test_integrations.py
    # (test_lightning_ddp_workaround_is_still_needed) fails once Lightning
    # no longer makes a CUDA stream for the device.
    if hasattr(strategy, "determine_ddp_device_ids") and strategy.root_device.type == DEVICE:
        strategy.determine_ddp_device_ids = lambda: None
# --8<-- [end:ddp]


# --8<-- [start:single-device]
def _single_device_on_the_device(connector_module: Any, connector: type) -> None:
    # Note [Lightning puts one custom device on the CPU]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Lightning 2.6's _choose_strategy gives a run on one device of an
    # accelerator it does not know by class (cuda, mps, xla) a
    # SingleDeviceStrategy on "cpu": Trainer(accelerator="<device>",
    # devices=1) would train on the CPU. The strategy it picks for the device
    # is the one device Lightning parsed. tests/python/test_integrations.py
    # (test_lightning_single_device_workaround_is_still_needed) fails once
    # Lightning picks the device by itself.
    original = connector._choose_strategy
    if getattr(original, "_accgen_device", None) == DEVICE:
        return

    def choose_strategy(self: Any) -> Any:
        flag = self._accelerator_flag
        ours = flag == DEVICE or getattr(flag, "name", lambda: None)() == DEVICE
        if ours and self._num_nodes_flag <= 1 and len(self._parallel_devices) == 1:
            return connector_module.SingleDeviceStrategy(device=self._parallel_devices[0])
        return original(self)

    choose_strategy._accgen_device = DEVICE  # type: ignore[attr-defined]
    choose_strategy._accgen_original = original  # type: ignore[attr-defined]
    connector._choose_strategy = choose_strategy
# --8<-- [end:single-device]


# --8<-- [start:register]
def register(module: Any, flavour: str) -> None:
    """Registers the device with the Lightning module that just loaded:
    `flavour` is "pytorch" or "fabric" for an ``accelerators`` module (its
    registry), "connector" for the Trainer's or Fabric's connector."""
    if flavour == "connector":
        connector = getattr(module, "_AcceleratorConnector", None) or module._Connector
        _single_device_on_the_device(module, connector)
        return
    registry = module.AcceleratorRegistry if flavour == "pytorch" else module.ACCELERATOR_REGISTRY
    name = DEVICE.capitalize() + ("Accelerator" if flavour == "pytorch" else "FabricAccelerator")
    cls = type(name, (_Methods, module.Accelerator), {
        "__doc__": f"The {DEVICE} device as a Lightning accelerator.",
        "__module__": __name__,
    })
    cls.register_accelerators(registry)
    globals()[name] = cls
# --8<-- [end:register]
