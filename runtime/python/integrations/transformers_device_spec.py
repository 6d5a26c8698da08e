"""transformers' own test suite on the device: the file that
``TRANSFORMERS_TEST_DEVICE_SPEC`` names.

transformers' ``testing_utils`` imports this file by its name (a file in the
working directory: ``python -m <package>.integrations transformers-spec``
copies it there) and runs every test marked for an accelerator on
``DEVICE_NAME``, with the functions below for seeding, emptying the cache and
counting devices. The device is the one the installed accgen backend
registered, which ``import torch`` loads.

transformers reads ``MANUAL_SEED_FN``, ``EMPTY_CACHE_FN`` and
``DEVICE_COUNT_FN`` from a spec file; its other per-device tables
(``BACKEND_SYNCHRONIZE``, the memory statistics, the accelerator module) it
fills only for the devices it knows, so this file fills the device's entries
as well, while transformers imports it.
"""

import sys

import torch

DEVICE_NAME = torch._C._get_privateuse1_backend_name()
if DEVICE_NAME == "privateuseone" or not hasattr(torch, DEVICE_NAME):
    raise RuntimeError(
        "TRANSFORMERS_TEST_DEVICE_SPEC names an accgen backend's device spec, "
        "but no accgen backend is loaded in this process: install the "
        "backend, and leave TORCH_DEVICE_BACKEND_AUTOLOAD unset (or 1)"
    )
_module = getattr(torch, DEVICE_NAME)

MANUAL_SEED_FN = _module.manual_seed
EMPTY_CACHE_FN = _module.empty_cache
DEVICE_COUNT_FN = _module.device_count
SYNCHRONIZE_FN = _module.synchronize
MEMORY_ALLOCATED_FN = _module.memory_allocated
MAX_MEMORY_ALLOCATED_FN = _module.max_memory_allocated
RESET_PEAK_MEMORY_STATS_FN = _module.reset_peak_memory_stats
RESET_MAX_MEMORY_ALLOCATED_FN = _module.reset_peak_memory_stats
TORCH_ACCELERATOR_MODULE = _module

# transformers.testing_utils' table of each device function, and the entry
# this device has in it.
_TABLES = {
    "BACKEND_SYNCHRONIZE": SYNCHRONIZE_FN,
    "BACKEND_MEMORY_ALLOCATED": MEMORY_ALLOCATED_FN,
    "BACKEND_MAX_MEMORY_ALLOCATED": MAX_MEMORY_ALLOCATED_FN,
    "BACKEND_RESET_PEAK_MEMORY_STATS": RESET_PEAK_MEMORY_STATS_FN,
    "BACKEND_RESET_MAX_MEMORY_ALLOCATED": RESET_MAX_MEMORY_ALLOCATED_FN,
    "BACKEND_TORCH_ACCELERATOR_MODULE": TORCH_ACCELERATOR_MODULE,
}
_testing_utils = sys.modules.get("transformers.testing_utils")
if _testing_utils is not None:
    for _table, _function in _TABLES.items():
        if isinstance(getattr(_testing_utils, _table, None), dict):
            getattr(_testing_utils, _table).setdefault(DEVICE_NAME, _function)
