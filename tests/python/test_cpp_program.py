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


def test_core_library_calls_its_own_functions_directly(device):
    # Note [Direct calls within the backend] (runtime/cmake/AccgenBackend.cmake):
    # no dynamic relocation binds a function the core library defines (its
    # calls to them are direct, not through the PLT or the GOT), and calls
    # into torch take their address from the GOT, not through PLT stubs.
    spec = importlib.util.find_spec(f"torch_{device}")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"torch_{device} is not installed as a package")
    if shutil.which("readelf") is None:
        pytest.skip("needs readelf")
    library = (pathlib.Path(spec.submodule_search_locations[0]) / "lib"
               / f"libtorch_{device}.so")
    listing = run(["readelf", "-rW", "--dyn-syms", str(library)]).stdout
    defined = set()
    bound = []
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[3] == "FUNC" and fields[6] != "UND":
            defined.add(fields[7].split("@")[0])
        elif len(fields) >= 5 and fields[2].endswith(("JUMP_SLOT", "GLOB_DAT")):
            bound.append((fields[2], fields[4].split("@")[0]))
    assert len(defined) > 1000, listing[:2000]
    own = [name for _, name in bound if name in defined]
    assert not own, own[:20]
    stubs = [name for kind, name in bound if kind.endswith("JUMP_SLOT")]
    assert len(stubs) < 10, stubs
