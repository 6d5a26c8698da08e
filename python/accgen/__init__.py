"""accgen, installed as a Python package: the `accgen` tool and what a
generated backend's build needs (the runtime's sources, the drivers and
accgen's CMake package) under this package's directory.

    accgen.prefix()     # the install prefix: bin/, share/accgen/, lib/cmake/
    accgen.cmake_dir()  # the directory of accgenConfig.cmake
    accgen.executable() # the accgen executable
"""
from importlib import metadata as _metadata
from pathlib import Path as _Path

__all__ = ["__version__", "cmake_dir", "executable", "prefix"]

try:
    __version__ = _metadata.version("accgen")
except _metadata.PackageNotFoundError:  # imported from a source checkout
    __version__ = "0+unknown"


def prefix() -> _Path:
    """The install prefix of the bundled tool and its CMake package."""
    return _Path(__file__).resolve().parent


def executable() -> _Path:
    """The accgen executable."""
    return prefix() / "bin" / "accgen"


def cmake_dir() -> _Path:
    """The directory holding accgenConfig.cmake, for `-Daccgen_DIR=`."""
    return prefix() / "lib" / "cmake" / "accgen"
