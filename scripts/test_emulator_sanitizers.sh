#!/usr/bin/env bash
# Builds the emulated device runtime and its test suite under sanitizers and
# runs the suite: `asan` is AddressSanitizer + UndefinedBehaviorSanitizer
# (build dir build-emu-asan), `tsan` is ThreadSanitizer (build-emu-tsan).
#
#   scripts/test_emulator_sanitizers.sh [asan|tsan|all] [-- gtest args...]
#
# The generator is not built (ACCGEN_BUILD_GENERATOR=OFF), only the emulator
# with emulator_tests, the driver acceptance tests against the emulator and
# the remote driver, and the runtime's tests (runtime_tests: a backend
# compiled from the runtime's sources, driven through libtorch from many
# threads). The death tests that expect SIGSEGV from a host access
# to device memory accept the sanitizer's own SEGV report instead of the
# signal (see tests/emulator/guard_test.cpp). Exit status: non-zero if any
# build or suite failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
which=${1:-all}
shift || true
if [[ "${1:-}" == "--" ]]; then
  shift
fi
gtest_args=("$@")
jobs=${ACCGEN_JOBS:-2}

run_one() {
  local name=$1 sanitize=$2
  local build="$here/build-emu-$name"
  echo "== $name: configure $build"
  cmake -S "$here" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DACCGEN_BUILD_GENERATOR=OFF \
    -DACCGEN_BUILD_BENCH=OFF \
    -DACCGEN_SANITIZE="$sanitize" >/dev/null
  echo "== $name: build"
  cmake --build "$build" --target emulator_tests runtime_tests \
    driver_tests_emulator driver_tests_remote -j "$jobs"
  echo "== $name: run"
  # halt_on_error everywhere: a report fails the suite instead of scrolling by.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
  TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
  ACCGEN_EMU_PROTECT=${ACCGEN_EMU_PROTECT:-1} \
    "$build/bin/emulator_tests" "${gtest_args[@]}"
  # The driver acceptance tests, against both drivers (the remote driver's
  # device process is built with the same sanitizer).
  echo "== $name: drivers"
  for driver in emulator remote; do
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
    ACCGEN_EMU_PROTECT=${ACCGEN_EMU_PROTECT:-1} \
      "$build/bin/driver_tests_$driver"
  done
  # The runtime's shared paths (streams, allocator, events, generators) from
  # many threads at once, and the allocator tests; torch itself is not
  # instrumented, so leak checking stays off here.
  echo "== $name: runtime"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
  TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
  ACCGEN_EMU_PROTECT=${ACCGEN_EMU_PROTECT:-1} \
    "$build/bin/runtime_tests" --gtest_filter='Concurrency.*:Allocator.*:Tensors.*:Operators.*'
}

case "$which" in
  asan) run_one asan "address;undefined" ;;
  tsan) run_one tsan "thread" ;;
  all)
    run_one asan "address;undefined"
    run_one tsan "thread"
    ;;
  *)
    echo "usage: $0 [asan|tsan|all] [-- gtest args...]" >&2
    exit 2
    ;;
esac
echo "== sanitizers: all passed"
