"""`accgen` (the console script) runs the bundled executable with its
arguments; `python -m accgen` does the same, and also answers
`--cmakedir` and `--prefix`, as `python -m pybind11` does, for plain CMake
builds: `cmake -Daccgen_DIR=$(python -m accgen --cmakedir) ...`."""
import os
import sys

import accgen


def run() -> None:
    """Replaces this process with the accgen executable."""
    binary = accgen.executable()
    if not binary.is_file():
        sys.exit(f"accgen: error: the executable is missing from the installed "
                 f"package ({binary}); reinstall accgen")
    os.execv(binary, [str(binary), *sys.argv[1:]])


def main() -> None:
    if sys.argv[1:] == ["--cmakedir"]:
        print(accgen.cmake_dir())
    elif sys.argv[1:] == ["--prefix"]:
        print(accgen.prefix())
    else:
        run()


if __name__ == "__main__":
    main()
