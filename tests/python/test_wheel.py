"""accgen as a Python package (pyproject.toml at the repository's root):
the wheel built with `pip wheel`, installed into a fresh venv with nothing
else of accgen in reach (no accgen on PATH, no CMAKE_PREFIX_PATH), and used
from there as a vendor uses it: `accgen init`, `accgen generate --check`,
`python -m accgen --cmakedir`, and a backend's CMake configure finding
accgen's package in the wheel.

The wheel and the venv are the session's (wheel_build.py, conftest.py). Two
backends are built from them with build isolation, pip bringing accgen from
the wheel's directory and the lock's torch into the build: the example
ported to the remote driver, here, and test_fallback_error.py's.
"""
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from init_backend import TEST_ONLY_BUILD
from remote_backend import check
from wheel_build import REPO, clean_env, run

# accgen's version, as CMakeLists.txt declares it.
VERSION = re.search(r"project\(accgen VERSION ([0-9.]+)",
                    (REPO / "CMakeLists.txt").read_text()).group(1)


@pytest.fixture(scope="module")
def venv(accgen_wheel):
    return accgen_wheel[0]


@pytest.fixture(scope="module")
def wheel(accgen_wheel):
    (built,) = accgen_wheel[1].glob("accgen-*.whl")
    return built


def test_the_wheel_holds_the_tool_and_its_package(wheel):
    assert wheel.name.startswith(f"accgen-{VERSION}-"), wheel.name
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("accgen/__init__.py", "accgen/__main__.py",
                 "accgen/bin/accgen", "accgen/bin/accgen-remote-device",
                 "accgen/lib/cmake/accgen/accgenConfig.cmake",
                 "accgen/lib/cmake/accgen/accgenRemoteTargets.cmake",
                 "accgen/lib/libaccgen_emulator.a",
                 "accgen/lib/libaccgen_remote.a",
                 "accgen/include/accgen/driver.h",
                 "accgen/share/accgen/runtime/cmake/AccgenBackend.cmake",
                 "accgen/share/accgen/runtime/src/Fallback.cpp",
                 "accgen/share/accgen/templates/backend/pyproject.toml.mustache"):
        assert name in names, name
    # The tool and the device process alone: no test program, no benchmark.
    assert {n for n in names if n.startswith("accgen/bin/")} == {
        "accgen/bin/accgen", "accgen/bin/accgen-remote-device"}


def test_the_tool_links_no_library_of_the_build_machine(venv):
    # yaml-cpp, xxhash and libstdc++ are linked in: the wheel needs no
    # -dev package and no newer libstdc++ than the system's.
    package = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / \
        "site-packages" / "accgen"
    for binary in ("accgen", "accgen-remote-device"):
        libs = run(["ldd", package / "bin" / binary]).stdout
        for lib in ("yaml-cpp", "xxhash", "libstdc++", "libgcc_s"):
            assert lib not in libs, f"{binary} links {lib}:\n{libs}"


def test_init_and_generate_from_the_venv(venv, tmp_path):
    env = clean_env(venv)
    version = run(["accgen", "--version"], env=env).stdout
    assert version.strip() == f"accgen {VERSION}", version
    created = run(["accgen", "init", "mybackend", "--dir", tmp_path / "mybackend"],
                  env=env, cwd=tmp_path)
    assert "created backend 'mybackend'" in created.stdout, created.stdout
    # From the wheel, the build needs nothing installed first: pip brings
    # accgen and torch into an isolated build.
    assert f"next: pip install {tmp_path / 'mybackend'}\n" in created.stdout, \
        created.stdout
    run(["accgen", "generate", "--check"], env=env, cwd=tmp_path / "mybackend")
    cmake_dir = run([venv / "bin" / "python", "-m", "accgen", "--cmakedir"],
                    env=env).stdout.strip()
    assert (pathlib.Path(cmake_dir) / "accgenConfig.cmake").is_file(), cmake_dir
    prefix = run([venv / "bin" / "python", "-m", "accgen", "--prefix"],
                 env=env).stdout.strip()
    assert pathlib.Path(cmake_dir).is_relative_to(prefix)


@pytest.fixture(scope="module")
def project(venv, tmp_path_factory):
    """`accgen init mybackend` from the venv."""
    where = tmp_path_factory.mktemp("init")
    run(["accgen", "init", "mybackend", "--dir", where / "mybackend"],
        env=clean_env(venv), cwd=where)
    return where / "mybackend"


def configure(venv, source, build, path=None):
    """A backend's CMake configure against the wheel alone: accgen_ROOT as
    scikit-build-core hands it to a build (the wheel's `cmake.root` entry
    point), given by hand; the Python with torch. Configure only: the
    build itself is test_fallback_error.py's."""
    prefix = run([venv / "bin" / "python", "-m", "accgen", "--prefix"],
                 env=clean_env(venv)).stdout.strip()
    env = clean_env(venv)
    cmake = "cmake"
    if path is not None:
        env["PATH"] = str(path)
        cmake = str(pathlib.Path(cmake_module_bin()) / "cmake")
    env.pop("CXX", None)
    return subprocess.run(
        [cmake, "-S", str(source), "-B", str(build), "-G", "Ninja",
         f"-Daccgen_ROOT={prefix}", f"-DPython3_EXECUTABLE={sys.executable}"],
        capture_output=True, text=True, env=env, timeout=600), prefix


def cmake_module_bin():
    import cmake
    return cmake.CMAKE_BIN_DIR


def test_a_backend_configures_against_the_wheel(venv, project, tmp_path):
    r, prefix = configure(venv, project, tmp_path / "build")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    found = re.search(r"^accgen_DIR:PATH=(.*)$", cache, re.M).group(1)
    assert pathlib.Path(found).resolve() == \
        (pathlib.Path(prefix) / "lib" / "cmake" / "accgen").resolve()


def edited_copy(project, tmp_path, old, new):
    """The project with one line of csrc/accgen_config.h replaced."""
    copy = tmp_path / "mybackend"
    shutil.copytree(project, copy, symlinks=True)
    config = copy / "csrc" / "accgen_config.h"
    text = config.read_text()
    assert old in text, text
    config.write_text(text.replace(old, new))
    return copy


def test_configure_refuses_another_torch_release(venv, project, tmp_path):
    # A backend generated for another torch than the build's: refused at
    # configure time, naming both releases and what to run.
    import torch

    release = torch.__version__.split("+")[0]
    copy = edited_copy(project, tmp_path,
                       f'ACCGEN_TORCH_RELEASE "{release}"',
                       'ACCGEN_TORCH_RELEASE "2.12.0"')
    r, _ = configure(venv, copy, tmp_path / "build")
    message = " ".join(r.stderr.split())
    assert r.returncode != 0, r.stdout[-2000:]
    for named in ("generated for torch 2.12.0", f"has torch {torch.__version__}",
                  "pip install torch==2.12.0", "accgen generate --update-lock"):
        assert named in message, (named, r.stderr)


def test_configure_refuses_an_older_accgen(venv, project, tmp_path):
    copy = edited_copy(project, tmp_path, f'ACCGEN_GENERATED_BY "{VERSION}"',
                       'ACCGEN_GENERATED_BY "99.0.0"')
    r, _ = configure(venv, copy, tmp_path / "build")
    message = " ".join(r.stderr.split())
    assert r.returncode != 0, r.stdout[-2000:]
    for named in ("generated by accgen 99.0.0",
                  f"the accgen package found is {VERSION}",
                  "pip install accgen==99.0.0"):
        assert named in message, (named, r.stderr)


def test_configure_names_a_missing_compiler(venv, project, tmp_path):
    # No C++ compiler on PATH: what to install, before CMake's own search
    # fails.
    bare = tmp_path / "bin"
    bare.mkdir()
    r, _ = configure(venv, project, tmp_path / "build", path=bare)
    message = " ".join(r.stderr.split())
    assert r.returncode != 0, r.stdout[-2000:]
    assert "No C++ compiler found on PATH" in message, r.stderr
    assert "apt-get install g++" in message, r.stderr


@pytest.fixture(scope="module")
def remote_port(venv, wheel, tmp_path_factory):
    """The example ported to the remote driver (examples/remote), as the
    guide ports it, from the wheel alone: its specs, kernels and device
    code, `accgen generate` from the venv, then `pip install` with build
    isolation and the remote driver's target; installed into a directory of
    its own."""
    work = tmp_path_factory.mktemp("remote-wheel")
    project, site = work / "raccel", work / "site"
    env = clean_env(venv, **TEST_ONLY_BUILD)
    # --8<-- [start:port-steps]
    for part in ("specs", "kernels", "device"):
        shutil.copytree(REPO / "examples" / "remote" / part, project / part)
    run(["accgen", "generate", "--specs", project / "specs", "--out", project],
        env=env)
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps",
         "--find-links", wheel.parent, "--target", site,
         "-Ccmake.define.ACCGEN_DRIVER_TARGET=accgen::remote", project],
        env=env, timeout=3600)
    # --8<-- [end:port-steps]
    return site


def test_the_remote_port_builds_from_the_wheel_alone(remote_port):
    # Its device code runs in the device process the wheel ships
    # (accgen/bin/accgen-remote-device), over memory the host cannot
    # address; results as the CPU's.
    check(remote_port, """
        assert not torch.raccel.host_addressable()
        torch.manual_seed(0)
        a, b, m = torch.randn(33, 17), torch.randn(33, 17), torch.randn(17, 9)
        da, db, dm = a.to("raccel"), b.to("raccel"), m.to("raccel")
        for device_result, cpu_result in [
                (da + db, a + b), (da * db, a * b), (torch.relu(da), torch.relu(a)),
                (da @ dm, a @ m), (da.sum(-1), a.sum(-1)),
                (torch.sigmoid(da), torch.sigmoid(a))]:
            assert device_result.device.type == "raccel"
            torch.testing.assert_close(device_result.cpu(), cpu_result)
        counts = torch.raccel.device_function_counts()
        for name in ("raccel_add_f32", "raccel_mul_f32", "raccel_relu_f32",
                     "raccel_mm_f32", "raccel_sum_f32"):
            assert counts.get(name, 0) > 0, (name, counts)
    """)
