"""The backend from C++ without Python: tests/cpp_program links libtorch and
the installed backend's core library (libtorch_<device>.so) through the CMake
package its wheel installs, puts tensors on the device and compares what it
computes with the CPU."""
import importlib.util
import os
import pathlib
import shutil
import subprocess

import pytest

_PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "cpp_program"


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                            **kwargs)
    assert result.returncode == 0, (
        f"{cmd} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def program(device, tmp_path_factory):
    spec = importlib.util.find_spec(f"torch_{device}")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"torch_{device} is not installed as a package")
    package_dir = pathlib.Path(spec.submodule_search_locations[0])
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake")
    build = tmp_path_factory.mktemp("cpp_program")
    run(["cmake", "-S", str(_PROGRAM), "-B", str(build), "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=Release", f"-DBACKEND={device}",
         f"-DCMAKE_PREFIX_PATH={package_dir}"])
    run(["cmake", "--build", str(build)])
    return build / "cpp_program"


def test_cpp_program_computes_on_the_device(program, device):
    # No Python in the process: the core library registers the device.
    env = dict(os.environ, ACCGEN_EMU_PROTECT="1")
    result = run([str(program)], env=env)
    assert result.stdout.startswith("ok: "), result.stdout + result.stderr
    assert f"of type '{device}'" in result.stdout
    linked = run(["ldd", str(program)]).stdout
    assert f"libtorch_{device}.so" in linked
    assert "libtorch_python" not in linked and "libpython" not in linked, linked
