"""Where a report comes from: accgen, the specs, torch, the driver, the
machine, the date, and the harness that made it."""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import pathlib
import platform
from typing import Any

import torch


def _sha256(paths: list[pathlib.Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def harness_hash(package_dir: pathlib.Path) -> str:
    """The SHA-256 of the code that checks: the report's modules and the
    conformance checks it runs."""
    files = sorted(p for folder in ("_report", "_conformance")
                   for p in (package_dir / folder).glob("*.py"))
    return _sha256(files)


def provenance(spec: Any, module: Any) -> dict[str, Any]:
    package_dir = pathlib.Path(module.__file__).parent
    manifest_path = package_dir / "_accgen_manifest.json"
    manifest = (json.loads(manifest_path.read_text(encoding="utf-8"))
                if manifest_path.is_file() else {})
    spec_path = pathlib.Path(spec.__file__)
    props = module.get_device_properties(0)
    return {
        "accgen": {"version": spec.ACCGEN_VERSION,
                   # Note [Input fingerprint]: the specs, the templates, the
                   # runtime and torch's schemas the backend was made from.
                   "inputs": manifest.get("inputs", "")},
        "specs": {"backend_spec_sha256": _sha256([spec_path]),
                  "torch_version": spec.TORCH_VERSION},
        "torch": {"version": torch.__version__,
                  "git": getattr(torch.version, "git_version", "")},
        "driver": {"name": props.name,
                   "devices": module.device_count(),
                   "total_memory": getattr(props, "total_memory", None),
                   "host_addressable": module.host_addressable()},
        "machine": {"platform": platform.platform(),
                    "machine": platform.machine(),
                    "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "date": datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%dT%H:%M:%SZ"),
        "harness_sha256": harness_hash(package_dir),
    }
