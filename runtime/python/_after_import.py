"""Registration with a module as it loads, without importing it first.

This file is accgen's runtime, not generated: each backend's wheel carries it
as ``<package>/_after_import.py``. The device registers itself with
libraries that take seconds to import (Dynamo and Inductor, DeepSpeed,
Lightning), which ``import torch`` must not pay for: each registration runs
when the module it needs has loaded, now if it is loaded, else through one
import hook that runs it right after the module's code.
"""

import importlib.abc
import sys
from typing import Any, Callable

_Callback = Callable[[Any], None]


class _AfterImport(importlib.abc.MetaPathFinder):
    # Runs each callback of `name` right after the module `name` has been
    # executed, once; leaves sys.meta_path when none is left.
    def __init__(self) -> None:
        self.callbacks: dict[str, list[_Callback]] = {}

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        callbacks = self.callbacks.pop(fullname, None)
        if callbacks is None:
            return None
        if not self.callbacks:
            sys.meta_path.remove(self)
        # The other finders find the module; this one only wraps its loading.
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            for callback in callbacks:
                callback(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


_hook = _AfterImport()


def after_import(callbacks: dict[str, _Callback]) -> None:
    """Runs ``callbacks[name](module)`` once the module ``name`` is loaded:
    now for a module already in sys.modules, else right after its code ran."""
    for name, callback in callbacks.items():
        if name in sys.modules:
            callback(sys.modules[name])
        else:
            _hook.callbacks.setdefault(name, []).append(callback)
    if _hook.callbacks and _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)
