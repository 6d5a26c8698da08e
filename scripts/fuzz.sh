#!/usr/bin/env bash
# Fuzzes every parser of accgen's inputs with libFuzzer under AddressSanitizer
# and UBSan (docs/reliability.md, "Fuzzing"):
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [RUNS_PER_TARGET]
#
# Builds the `fuzz` preset (clang), seeds a corpus per target from this
# repository's specs, error cases, goldens and templates (and, for the
# native_functions.yaml reader, slices of the installed torch's copy), then
# runs each target for SECONDS_PER_TARGET (default 20) or RUNS_PER_TARGET
# executions, whichever ends first, with time and memory limits, two targets
# at a time. Exits non-zero when a target finds a crash, a sanitizer report,
# a time-out or runaway memory; libFuzzer leaves the input as
# build-fuzz/findings/<target>/crash-*. Prints the executions of each
# target.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_PER_TARGET=${1:-20}
RUNS=${2:--1}
export CCACHE_BASEDIR=$ROOT

cmake --preset fuzz >/dev/null
# The fuzz targets alone (the preset's tool and emulator are not needed).
FUZZ_TARGETS=(fuzz_backend_spec fuzz_operators_spec fuzz_autocast_spec
              fuzz_lock fuzz_schema fuzz_native_functions fuzz_template)
# Quiet unless it fails: then the build's output says why.
BUILD_LOG=$(mktemp)
if ! cmake --build --preset fuzz -j2 --target "${FUZZ_TARGETS[@]}" \
    >"$BUILD_LOG" 2>&1; then
  cat "$BUILD_LOG"
  rm -f "$BUILD_LOG"
  echo "fuzz: building the fuzz targets failed" >&2
  exit 1
fi
rm -f "$BUILD_LOG"

WORK=$ROOT/build-fuzz
SEEDS=$WORK/seeds
rm -rf "$SEEDS"
mkdir -p "$SEEDS" "$WORK/findings"

# seed TARGET FILE...: copies each file into TARGET's seed corpus.
seed() {
  local target=$1
  shift
  mkdir -p "$SEEDS/$target"
  local f
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$SEEDS/$target/$(echo "$f" | tr '/' '_')"
  done
  return 0
}
shopt -s nullglob
for name in backend operators autocast; do
  seed "${name}_spec" specs/$name.yaml tests/errors/*/$name.yaml \
    tests/golden/*/specs/$name.yaml templates/init/specs/$name.yaml.mustache
done
seed lock specs/accgen.lock tests/errors/*/accgen.lock
seed template $(find templates -name '*.mustache')
NATIVE=$(python3 -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("torchgen").submodule_search_locations[0]) / "packaged/ATen/native/native_functions.yaml")' 2>/dev/null || true)
mkdir -p "$SEEDS/native_functions" "$SEEDS/schema"
# One schema a file: the custom schemas of the specs, and every 20th of torch's.
{
  grep -ho 'schema: *"[^"]*"' specs/operators.yaml tests/errors/*/operators.yaml \
    | sed 's/^schema: *"//; s/"$//'
  [ -f "$NATIVE" ] && sed -n 's/^- func: //p' "$NATIVE" | awk 'NR % 20 == 1'
} | awk -v dir="$SEEDS/schema" '{ printf "%s", $0 > sprintf("%s/%04d", dir, NR); close(sprintf("%s/%04d", dir, NR)) }'
if [ -f "$NATIVE" ]; then
  # Slices of about 40 entries: whole entries, as the reader expects.
  awk -v dir="$SEEDS/native_functions" '
    /^- func:/ { if (++n % 40 == 1) file = sprintf("%s/slice_%04d.yaml", dir, n / 40) }
    file { print > file }' "$NATIVE"
fi

# fuzz_one BIN: one target's run, its log in findings/<target>.log; prints
# its executions, or the end of its log when it found a problem.
fuzz_one() {
  local bin=$1
  local target=${bin##*/fuzz_}
  local corpus=$WORK/corpus/$target
  mkdir -p "$corpus" "$WORK/findings/$target"
  local log=$WORK/findings/$target.log
  if ! "$bin" "$corpus" "$SEEDS/$target" -max_total_time="$SECONDS_PER_TARGET" \
      -runs="$RUNS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$WORK/findings/$target/" -print_final_stats=1 \
      >"$log" 2>&1; then
    echo "fuzz: $target found a problem:"
    tail -n 40 "$log"
    return 1
  fi
  local runs
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  echo "fuzz: $target: ${runs:-?} executions, no crash"
}

# Two targets at a time: each runs on one core.
status=0
running=0
for target in "${FUZZ_TARGETS[@]}"; do
  if ((running == 2)); then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$WORK/bin/$target" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
