#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing, builds
# accgen, the emulator and the tests, runs the gtest suites (plain and under
# AddressSanitizer + UBSan), fuzzes accgen's input parsers for a short while,
# checks generated_example/ against the specs, builds the documentation site,
# builds and installs the example backend and drives it with pytest: its
# generated conformance suite (on a build under ASan + UBSan) and this
# repository's suites.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
# Compiler command lines relative to the checkout: ccache hits across clones.
export CCACHE_BASEDIR=$ROOT
# ccache leaves a unit that uses a precompiled header (every ATen-heavy unit
# of the runtime and the backends) uncached unless told that the header's
# defines and timestamps may be trusted.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
# Each section's start, in minutes and seconds since the command began.
section() { echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

bash scripts/bootstrap.sh

section "format (.clang-format)"
bash scripts/check_format.sh

section "docs (mkdocs build --strict, snippet markers)"
bash scripts/check_docs.sh

section "build (preset default)"
cmake --preset default >/dev/null
cmake --build --preset default -j2

section "lint runtime/ (clang-tidy, runtime/.clang-tidy)"
bash scripts/lint_runtime.sh build

section "gtest suites"
ctest --preset default -j2

if [ -x scripts/test_emulator_sanitizers.sh ]; then
  section "emulator under AddressSanitizer + UBSan"
  bash scripts/test_emulator_sanitizers.sh asan
fi

section "fuzz accgen's input parsers (libFuzzer, ASan + UBSan), 5 s a target"
bash scripts/fuzz.sh 5

section "install accgen to build/install"
cmake --install build --prefix build/install >/dev/null
ACCGEN=$ROOT/build/install/bin/accgen

# --8<-- [start:test-backend]
section "generated_example/ matches specs/"
"$ACCGEN" generate --check --specs specs --out generated_example

# CMake finds accgen's package from its bin/ on PATH, as a vendor's build does.
export PATH=$ROOT/build/install/bin:$PATH

if [ -f generated_example/pyproject.toml ]; then
  section "build and install the example backend"
  # The compiler cache's base is the project, as for the backends the
  # suites build: the runtime's units then have the same compile lines in
  # each, and are compiled once (Note [The runtime does not read the
  # backend's configuration]).
  CCACHE_BASEDIR=$ROOT/generated_example \
    "$PY" -m pip install -q --no-build-isolation ./generated_example
fi

# The example's generated conformance suite runs once, on the build under
# ASan + UBSan with the emulator's access guard on: the same checks as on
# the plain build, and what the sanitizers see besides. The plain build is
# what the suites below drive.
section "the example's generated conformance suite, on a build under ASan + UBSan"
bash scripts/test_backend_sanitizers.sh short

section "pytest"
# test_schema_compile.py is the all-operator signature proof; ctest ran it
# above against the library it built.
# Two workers, a file each at a time (--dist loadfile), so that a file's
# backend build (a module fixture) is made once. The slowest tests are
# listed at the end, to keep the command's time in view.
ACCGEN_BIN=$ACCGEN ACCGEN_PREFIX=$ROOT/build/install \
  "$PY" -m pytest -q -p no:cacheprovider tests/python \
  --ignore=tests/python/test_schema_compile.py -n 2 --dist loadfile \
  --durations=25
# --8<-- [end:test-backend]
section "done"
