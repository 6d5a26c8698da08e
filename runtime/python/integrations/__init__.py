"""The device in the libraries users train with: DeepSpeed, Lightning,
Hugging Face accelerate and ``Trainer``, PEFT, and transformers' own tests.

This package is accgen's runtime, not generated: each backend's wheel
carries it as ``<package>/integrations/``, and everything in it follows
from the backend's specs (its device name, its c10d backend, its dtypes).
Each library finds a device by a list of its own or by an abstraction class;
the adapters here map that onto ``torch.<device>`` and ``torch.accelerator``:

- DeepSpeed (``deepspeed.py``): a ``DeepSpeedAccelerator`` for the device,
  selected as DeepSpeed's accelerator when DeepSpeed loads, by
  ``DS_ACCELERATOR=<device>`` or, with ``DS_ACCELERATOR`` unset, because the
  device is there (as DeepSpeed selects the devices it knows);
- Lightning (``lightning.py``): an ``Accelerator`` registered under the
  device's name when Lightning loads, so ``Trainer(accelerator="<device>")``;
- transformers' test suite (``transformers_device_spec.py``): the file
  ``TRANSFORMERS_TEST_DEVICE_SPEC`` names;
- accelerate and PEFT need nothing of the backend in one process
  (accelerate finds the device through ``torch.accelerator``), and
  ``transformers.Trainer`` needs ``ACCELERATE_TORCH_DEVICE=<device>``
  (docs/guide/huggingface.md says what transformers and several processes
  still need upstream).

Nothing here imports any of those libraries: ``install()`` only asks to be
called when they load (``_after_import.py``), so ``import torch`` costs no
more with the adapters than without.
"""

import os
from typing import Any

import torch

from .. import _C
from .. import _device
from .._after_import import after_import

DEVICE: str = _C._config["device"]
PACKAGE: str = _C._config["package"]
ENV_PREFIX: str = _C._config["env_prefix"]


class IntegrationError(RuntimeError):
    """The device was asked of a library in a way that cannot work."""


def distributed_backend() -> str:
    """The device's c10d backend, as torch.distributed names it."""
    return _C._distributed_backend_name()


def declared_dtypes() -> list[torch.dtype]:
    """The floating dtypes the backend declares for training, in the order
    DeepSpeed groups gradients by: float32, then the dtypes autocast may cast
    to (features.autocast of the backend's specs)."""
    amp = getattr(_device, "get_amp_supported_dtype", None)
    return [torch.float32] + (amp() if amp is not None else [])


def device_usable() -> bool:
    """Whether the backend holds the device type in this process and its
    driver finds a device: what require_device asks, as a question."""
    return bool(_C._owns_device()) and _device.is_available()


def require_device(asked_by: str) -> None:
    """Raises IntegrationError naming what is missing when `asked_by` selects
    the device and the backend cannot run it in this process."""
    if not _C._owns_device():
        other = _C._device_taken_by()
        raise IntegrationError(
            f"{asked_by} selects the {DEVICE} device, but {PACKAGE} is not "
            f"active in this process: PyTorch takes one PrivateUse1 backend "
            f"per process, and '{other}' ({_device._package_of_device(other)}) "
            f"registered first. Set TORCH_DEVICE_BACKEND_AUTOLOAD=0 and import "
            f"{PACKAGE} before anything else loads a backend."
        )
    if not _device.is_available():
        raise IntegrationError(
            f"{asked_by} selects the {DEVICE} device, but its driver finds no "
            f"device (torch.{DEVICE}.device_count() is 0)."
        )


def _deepspeed_loaded(module: Any) -> None:
    from . import deepspeed

    deepspeed.select_on_load(module)


def _lightning_loaded(flavour: str) -> Any:
    def loaded(module: Any) -> None:
        from . import lightning

        lightning.register(module, flavour)

    return loaded


# --8<-- [start:install]
def install() -> None:
    """Registers the device with each library as it loads (the backend's
    registration calls this once)."""
    after_import({
        "deepspeed.accelerator.real_accelerator": _deepspeed_loaded,
        "lightning.fabric.accelerators": _lightning_loaded("fabric"),
        "lightning.fabric.connector": _lightning_loaded("connector"),
        "lightning.pytorch.accelerators": _lightning_loaded("pytorch"),
        "lightning.pytorch.trainer.connectors.accelerator_connector":
            _lightning_loaded("connector"),
        "lightning_fabric.accelerators": _lightning_loaded("fabric"),
        "lightning_fabric.connector": _lightning_loaded("connector"),
        "pytorch_lightning.accelerators": _lightning_loaded("pytorch"),
        "pytorch_lightning.trainer.connectors.accelerator_connector":
            _lightning_loaded("connector"),
    })
# --8<-- [end:install]


def selected_by_environment(variable: str) -> bool:
    """Whether the environment variable `variable` names this device."""
    return os.environ.get(variable, "").strip().lower() == DEVICE
