#!/usr/bin/env bash
# The example backend built with AddressSanitizer and UBSan, and driven by
# its generated conformance suite with the emulator's access guard on.
#
#   scripts/test_backend_sanitizers.sh [short|full] [-- pytest args...]
#
# The emulator and the runtime come from build-emu-asan (accgen's own build
# with ACCGEN_SANITIZE="address;undefined", installed to
# build-emu-asan/install), and the backend's own sources (generated code,
# kernels, the runtime compiled into it) get the same flags; torch itself
# is not instrumented. The backend is installed into build-backend-asan/site,
# away from the plain build, and Python runs with the sanitizer runtime
# preloaded. `short` (the test command runs it) is the whole conformance
# suite; `full` adds this repository's device suites (models, devices,
# memory, hook operators, autograd, misuse, sparse and quantized).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-full}
shift || true
if [[ "${1:-}" == "--" ]]; then
  shift
fi
PY=${PYTHON:-python3}
jobs=${ACCGEN_JOBS:-2}
emu="$here/build-emu-asan"
work="$here/build-backend-asan"
site="$work/site"
# -O0 and line tables (-g1): what ASan's reports need (file:line in their
# stacks), without the full debug info of RelWithDebInfo's -O2 -g. -O0
# compiles the ATen-heavy units in about half the time of -O1, and the
# conformance suite runs no slower (most of its time is torch's).
sanitize="-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -g1"

echo "== backend under ASan + UBSan: the emulator and runtime (build-emu-asan)"
cmake -S "$here" -B "$emu" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DACCGEN_BUILD_GENERATOR=OFF \
  -DACCGEN_BUILD_BENCH=OFF \
  -DACCGEN_SANITIZE="address;undefined" >/dev/null
cmake --build "$emu" --target accgen_emulator accgen_remote -j "$jobs"
cmake --install "$emu" --prefix "$emu/install" >/dev/null

echo "== backend under ASan + UBSan: build generated_example into $site"
# The example's sources are copied so that the plain build's directory
# (generated_example/build) is left alone.
rm -rf "$work/src"
mkdir -p "$work/src"
# Timestamps kept: a rerun rebuilds only what changed.
cp -a "$here/generated_example/." "$work/src/"
rm -rf "$work/src/build"
CCACHE_BASEDIR="$work" CMAKE_BUILD_PARALLEL_LEVEL="$jobs" \
  "$PY" -m pip install -q --no-build-isolation --no-deps --upgrade \
  --target "$site" \
  -C build-dir="$work/build" \
  -C cmake.build-type=RelWithDebInfo \
  -C cmake.define.CMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" \
  -C cmake.define.CMAKE_PREFIX_PATH="$emu/install" \
  -C cmake.define.CMAKE_CXX_FLAGS="$sanitize" \
  -C cmake.define.CMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -C cmake.define.CMAKE_MODULE_LINKER_FLAGS="-fsanitize=address,undefined" \
  "$work/src"

# ASan's __cxa_throw interceptor needs libstdc++ loaded before it starts
# (python itself does not link it). Leaks: the interpreter and torch keep
# their allocations to the end. The build in $site is found first on the
# path, and torch's autoload loads it.
run_pytest() {
  LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)" \
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
  ACCGEN_EMU_PROTECT=1 \
  PYTHONPATH="$site" \
    "$PY" -c "import sys, torch, torch_accel, pytest
assert torch_accel.__file__.startswith('$site'), torch_accel.__file__
sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-n', '$jobs'] + sys.argv[1:]))" "$@"
}

echo "== backend under ASan + UBSan: the conformance suite"
(cd "$work/src" && run_pytest tests/conformance "$@")
if [[ "$mode" == full ]]; then
  echo "== backend under ASan + UBSan: this repository's device suites"
  # The access guard's own SIGSEGV is what the deselected test expects;
  # ASan reports the fault instead of dying of the signal.
  (cd "$here" && run_pytest tests/python/test_models.py tests/python/test_device.py \
    tests/python/test_memory.py tests/python/test_hook_ops.py \
    tests/python/test_ops_autograd.py tests/python/test_device_misuse.py \
    tests/python/test_sparse_quantized.py \
    --deselect tests/python/test_memory.py::test_guard_faults_a_host_read_of_device_memory "$@")
fi
echo "== backend under ASan + UBSan: clean"
