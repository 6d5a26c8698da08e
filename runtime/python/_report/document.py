"""The report as a file: its schema's name and version, reading one back
with every fault named, and writing without ever leaving half a file."""
from __future__ import annotations

import gzip
import json
import os
import pathlib
import signal
import tempfile
import threading
from typing import Any

SCHEMA = "accgen-report"
# Version 1: the keys below, docs/guide/report.md "The JSON".
VERSION = 1
_TOP_KEYS = ("schema", "version", "backend", "provenance", "summary",
             "operators", "numerics", "capabilities")

# Exit codes of `python -m <package>.report` (docs/guide/report.md).
EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_BAD_REPORT = 3
EXIT_ENVIRONMENT = 4
EXIT_INTERRUPTED = 130


class ReportError(Exception):
    """A fault the command reports in one line and an exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_REPORT) -> None:
        super().__init__(message)
        self.code = code


_interrupted = threading.Event()


def _on_interrupt(signum: int, frame: Any) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


def catch_interrupts() -> None:
    """Ctrl-C (SIGINT) stops the run even where code it runs swallows the
    KeyboardInterrupt (a bare `except:` in a sample function): the signal
    is remembered, and check_interrupted() raises it again."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_interrupt)


def check_interrupted() -> None:
    """Raises KeyboardInterrupt if SIGINT came (catch_interrupts); the
    report's loops call it between entries and between checks."""
    if _interrupted.is_set():
        raise KeyboardInterrupt


def load(path: str) -> dict[str, Any]:
    """The report at `path` (JSON, or JSON compressed with gzip as
    `.json.gz`), checked to be one this version reads."""
    try:
        raw = pathlib.Path(path).read_bytes()
        if path.endswith(".gz"):
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except OSError as error:
        raise ReportError(f"{path}: cannot read it: "
                          f"{error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ReportError(f"{path}: not text: {error.reason}") from None
    try:
        report = json.loads(text)
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}:{error.lineno}:{error.colno}: not JSON: "
                          f"{error.msg}") from None
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        raise ReportError(f"{path}: not an accgen report (its \"schema\" is "
                          f"not {SCHEMA!r})")
    if report.get("version") != VERSION:
        raise ReportError(f"{path}: a report of schema version "
                          f"{report.get('version')!r}; this command reads "
                          f"version {VERSION} (regenerate it with this "
                          f"backend's report command)")
    missing = [key for key in _TOP_KEYS if key not in report]
    if missing:
        raise ReportError(f"{path}: the report lacks {', '.join(missing)} "
                          f"(a truncated or edited file?)")
    return report


def dumps(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=1) + "\n"


def write_atomically(path: pathlib.Path, text: str) -> None:
    """`text` into `path` through a file beside it, renamed over `path` only
    once complete: an interrupted run leaves the previous file in place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        # mkstemp's file is private; the report gets the mode of any file
        # the user creates.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
