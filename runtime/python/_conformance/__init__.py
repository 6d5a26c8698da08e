"""The conformance checks of a generated backend.

Installed in every backend's package as ``_conformance``. The backend's
generated ``tests/conformance/`` suite parametrizes these checks over what
its specs say (``backend_spec.py``): every function it registers over the
dtypes it declares, its custom operators, its autocast policies, and the
runtime. Nothing here knows a particular backend.

How an operator is checked (:meth:`Suite.check_operator`): its inputs come
from torch's OpInfo database where an entry calls the function (recorded
at the dispatcher, so the exact overload and arguments are known), else
they are generated from its schema; every input the CPU accepts runs on the
CPU and on the device, in the registered form (functional, in-place,
``out=``), and the results and written arguments must match. Then the same
with non-contiguous, zero-size and broadcast inputs, and the gradient where
the function has a derivative. Random functions are checked for
reproducibility under a seed instead of equality with the CPU.

The modules, by job:

* ``cases``: what the suite checks (its cases) and what it reads of an
  operator's schema;
* ``inputs``: an operator's inputs, from the OpInfo database or its schema;
* ``compare``: values moved to the device, results compared with the CPU's;
* ``suite``: the Suite, which checks an operator, a custom operator or an
  autocast policy, and the pytest markers;
* ``families``: the builtin and hook operators' own checks;
* ``runtime_checks``: the runtime's checks (devices, streams, events,
  memory, RNG, serialization, compile, distributed).
"""
from .cases import (
    AutocastCase,
    ConformanceError,
    CustomCase,
    OperatorCase,
    functional_of,
    overload_of,
)
from .compare import describe_inputs
from .inputs import opinfo_inputs, opinfo_samples, schema_inputs, seed
from .runtime_checks import (
    RuntimeCase,
    check_accelerator,
    check_autocast_basics,
    check_compile,
    check_devices,
    check_distributed,
    check_empty_cache,
    check_events,
    check_fallback_policy,
    check_invalid_index,
    check_memory_statistics,
    check_out_of_memory,
    check_pinned_memory,
    check_rng,
    check_serialization,
    check_stream_ordering,
    runtime_cases,
)
from .suite import MARKERS, Suite, configure, suite

__all__ = [
    "AutocastCase", "ConformanceError", "CustomCase", "MARKERS",
    "OperatorCase", "RuntimeCase", "Suite", "check_accelerator",
    "check_autocast_basics", "check_compile", "check_devices",
    "check_distributed", "check_empty_cache", "check_events",
    "check_fallback_policy", "check_invalid_index", "check_memory_statistics",
    "check_out_of_memory", "check_pinned_memory", "check_rng",
    "check_serialization", "check_stream_ordering", "configure",
    "describe_inputs", "functional_of", "opinfo_inputs", "overload_of",
    "runtime_cases", "schema_inputs", "suite",
]
