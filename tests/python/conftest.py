"""Shared fixtures of the pytest suites that drive a generated backend.

The suites run against an installed generated backend: by default the one
accgen makes from this repository's specs/ (generated_example/), installed
with

    CMAKE_PREFIX_PATH=<accgen build or install prefix> \\
        pip install --no-build-isolation generated_example

The device under test is ACCGEN_TEST_DEVICE, or else `device:` of
ACCGEN_TEST_SPECS/backend.yaml (default: specs/backend.yaml here); its
package is ACCGEN_TEST_PACKAGE, `package:` of that file, or
torch_<device>. `import torch` loads the backend through its
`torch.backends` entry point; the package is imported explicitly as well,
so that a backend on PYTHONPATH without an entry point works too. Tests
that need a fresh interpreter (environment overrides, autoload) use the
`run_python` fixture.

The suites run with the emulator's access guard on (ACCGEN_EMU_PROTECT=1,
unless the environment says otherwise): a host dereference of device memory,
or a kernel touching memory it did not declare, fails the run.
"""

import importlib
import os
import pathlib
import subprocess
import sys

# Before torch loads the backend: the emulator reads it on first use.
os.environ.setdefault("ACCGEN_EMU_PROTECT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import yaml

_REPO = pathlib.Path(__file__).resolve().parents[2]

# The fixtures that build a backend (minutes each, on every core).
_BUILDS = ("strict_backend", "second_backend", "remote_backend", "accgen_wheel")


def pytest_collection_modifyitems(items):
    """The files whose tests build a backend run first (the order the test
    workers take files in, under --dist loadfile): a build keeps every core
    busy, so a worker waiting for another's build costs nothing, whereas a
    build left for the end of the run is all that runs while the other
    worker sits idle."""
    first = {item.path for item in items
             if any(name in _BUILDS for name in item.fixturenames)}
    items.sort(key=lambda item: item.path not in first)


# --8<-- [start:device-under-test]
def _device_and_package() -> tuple[str, str]:
    device = os.environ.get("ACCGEN_TEST_DEVICE")
    package = os.environ.get("ACCGEN_TEST_PACKAGE")
    if device is None:
        specs = pathlib.Path(os.environ.get("ACCGEN_TEST_SPECS", _REPO / "specs"))
        try:
            with open(specs / "backend.yaml", encoding="utf-8") as spec_file:
                backend = yaml.safe_load(spec_file)
        except OSError as error:
            pytest.fail(
                f"no device to test: set ACCGEN_TEST_DEVICE or provide "
                f"{error.filename}",
                pytrace=False,
            )
        device = backend["device"]
        package = package or backend.get("package")
    return device, package or f"torch_{device}"
# --8<-- [end:device-under-test]


@pytest.fixture(scope="session")
def device() -> str:
    """The device type under test, e.g. "accel"; its backend is imported."""
    name, package = _device_and_package()
    try:
        importlib.import_module(package)
    except ImportError as error:
        pytest.fail(
            f"the {name} backend ({package}) is not installed: {error}. Install "
            "it with `CMAKE_PREFIX_PATH=<accgen prefix> pip install "
            "--no-build-isolation generated_example`",
            pytrace=False,
        )
    return name


@pytest.fixture(scope="session")
def mod(device):
    """torch.<device>: the backend's device module."""
    return getattr(torch, device)


@pytest.fixture(scope="session")
def run_python():
    """Runs Python code in a fresh interpreter and returns the completed
    process (text stdout/stderr). `env` entries are added to the current
    environment; a value of None removes the variable."""

    def run(code: str, env: dict | None = None, timeout: float = 120):
        full_env = dict(os.environ)
        for key, value in (env or {}).items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = value
        return subprocess.run(
            [sys.executable, "-c", code],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture(scope="session")
def scaled_add(device):
    """The example's custom operator, torch.ops.<namespace>.scaled_add;
    skips a test on a backend without it."""
    specs = pathlib.Path(os.environ.get("ACCGEN_TEST_SPECS", _REPO / "specs"))
    with open(specs / "backend.yaml", encoding="utf-8") as spec_file:
        namespace = yaml.safe_load(spec_file).get("namespace", device)
    ns = getattr(torch.ops, namespace)
    if not hasattr(ns, "scaled_add"):
        pytest.skip("the backend has no scaled_add custom operator")
    return ns.scaled_add


@pytest.fixture(scope="session")
def two_devices(mod):
    """Skips a test that needs two devices when there are fewer."""
    if mod.device_count() < 2:
        pytest.skip("needs at least two devices")


@pytest.fixture(scope="session")
def pinned_memory(mod):
    """Skips a test of pinned memory when the backend was generated without
    it (features.pinned_memory: false)."""
    if not hasattr(mod, "empty_host_cache"):
        pytest.skip("the backend has no pinned memory")


@pytest.fixture(scope="session")
def autocast(mod):
    """Skips a test of autocast when the backend was generated without it
    (features.autocast: false)."""
    if not hasattr(mod, "get_amp_supported_dtype"):
        pytest.skip("the backend has no autocast")


@pytest.fixture(scope="session")
def accgen_wheel(tmp_path_factory):
    """accgen's wheel (pyproject.toml at the repository's root), built once
    per test run, and a fresh venv with it installed and nothing else
    (wheel_build.py): (the venv, the directory holding the wheel)."""
    from wheel_build import build_accgen_wheel

    venv = _built_once(tmp_path_factory, "accgen-wheel", build_accgen_wheel)
    return venv, venv.parent / "wheels"


@pytest.fixture(scope="session")
def second_backend(tmp_path_factory):
    """An `accgen init second` backend, built once per test run and shared by
    the test workers (init_backend.py): the first worker to ask builds it
    under a lock in the run's shared temporary directory, the others wait
    for it. A failed build is remembered, so that it fails every asker
    without being built again."""
    from init_backend import ACCGEN, PREFIX, build_init_backend

    if not ACCGEN or not PREFIX:
        pytest.skip("set ACCGEN_BIN and ACCGEN_PREFIX (scripts/test.sh does) "
                    "to build an init-generated backend")
    return _built_once(tmp_path_factory, "init", build_init_backend)


def _built_once(tmp_path_factory, name, build):
    """`build(work)` once per test run, in the run's shared temporary
    directory under a lock, for every test worker; returns work/site. A
    failed build is remembered, so that it fails every asker without being
    built again."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    work = shared / name
    failed = shared / f"{name}.failed"
    with FileLock(str(shared / f"{name}.lock")):
        if failed.exists():
            pytest.fail(failed.read_text(), pytrace=False)
        if not (work / "site").is_dir():
            work.mkdir(exist_ok=True)
            try:
                build(work)
            except BaseException as error:
                failed.write_text(f"building the {name} backend failed: {error}")
                raise
    return work / "site"


@pytest.fixture(scope="session")
def remote_backend(tmp_path_factory):
    """The example ported to the remote driver (examples/remote), built
    once per test run and shared by the test workers (remote_backend.py).
    Built as the example is (not TEST_ONLY_BUILD): the runtime's units then
    come from the compiler cache (Note [The runtime does not read the
    backend's configuration])."""
    from remote_backend import build_remote_backend

    if not os.environ.get("ACCGEN_BIN") or not os.environ.get("ACCGEN_PREFIX"):
        pytest.skip("set ACCGEN_BIN and ACCGEN_PREFIX (scripts/test.sh does) "
                    "to build the remote backend")
    return _built_once(tmp_path_factory, "remote", build_remote_backend)


@pytest.fixture(scope="session")
def suite(device, mod):
    """The conformance suite the example backend ships
    (<package>._conformance), for the backend under test: this repository's
    suites call its checks rather than keep near-duplicates of them."""
    import importlib.util

    specs = pathlib.Path(os.environ.get("ACCGEN_TEST_SPECS", _REPO / "specs"))
    spec_file = specs.parent / "tests" / "conformance" / "backend_spec.py"
    if not spec_file.is_file():
        spec_file = _REPO / "generated_example" / "tests" / "conformance" / "backend_spec.py"
    loader = importlib.util.spec_from_file_location("backend_spec", spec_file)
    backend_spec = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(backend_spec)
    if backend_spec.DEVICE != device:
        pytest.skip(f"{spec_file} describes device {backend_spec.DEVICE!r}, "
                    f"not {device!r}")
    conformance = importlib.import_module(backend_spec.PACKAGE + "._conformance")
    return conformance.Suite(backend_spec)


@pytest.fixture(scope="session")
def checks(suite):
    """The package of the shipped checks (<package>._conformance):
    checks.check_events(suite), ..."""
    return sys.modules[type(suite).__module__.rpartition(".")[0]]
