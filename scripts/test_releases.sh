#!/usr/bin/env bash
# The torch release matrix: every supported release after the pinned one
# (torch_releases.txt), or the releases given as arguments, each in a venv of
# its own. .ci/run runs it after scripts/test.sh, whose accgen install
# (build/install, or $ACCGEN_PREFIX) it uses; run alone, it builds that first.
#
# A leg, for release R (docs/upgrading.md, "Supported releases"):
#   1. the venv $ACCGEN_CACHE/venvs/torch-R (default ~/.cache/accgen), made
#      and bootstrapped once, kept between runs;
#   2. the example regenerated under R (`accgen generate --update-lock`, with
#      R's python3 first on PATH, as a vendor regenerates), built and
#      installed into the venv: the runtime compiled against R;
#   3. its generated conformance suite, then tests/python/test_compile.py,
#      test_distributed.py, test_torchvision.py (torchvision's models and
#      operators, which need a CUDA build of torch), test_integrations.py
#      (DeepSpeed, Lightning, Hugging Face, PEFT) and test_report.py (the
#      example's report, diffed against the one published for R in
#      docs/reports/data/) against it, then the remote driver's tests
#      (test_remote_backend*.py: the ported example built against R and
#      the remote driver, its report diffed against its published one);
#   ACCGEN_UPDATE_REPORTS=1 publishes the legs' reports instead of diffing;
#   4. `accgen init` under R: its lock and pyproject must pin R; the project
#      built into a directory of its own and its own suite run (the smoke
#      test init wrote and its generated conformance suite).
# Each leg prints one summary line; a failure names the release and the step,
# with the end of that step's log. Exit status: 0 when every leg passed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${ACCGEN_CACHE:-$HOME/.cache/accgen}
TORCHVISION=${ACCGEN_TORCHVISION:-torchvision==0.29.2}
WORK_ROOT=$ROOT/build/releases
export CCACHE_BASEDIR=$ROOT
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime

# Every supported release, oldest (the pinned one) first.
mapfile -t SUPPORTED < <(grep '^[0-9]' torch_releases.txt)
if (($#)); then
  RELEASES=("$@")
else
  RELEASES=("${SUPPORTED[@]:1}")
fi

PREFIX=${ACCGEN_PREFIX:-$ROOT/build/install}
ACCGEN=$PREFIX/bin/accgen
if [ ! -x "$ACCGEN" ]; then
  PREFIX=$ROOT/build/install
  ACCGEN=$PREFIX/bin/accgen
  echo "== build and install accgen to build/install"
  bash scripts/bootstrap.sh
  cmake --preset default >/dev/null
  cmake --build --preset default -j2 --target accgen accgen_emulator accgen_remote
  cmake --install build --prefix build/install >/dev/null
fi

# The pytest summary of a log: its last line that counts tests.
summary_of() {
  grep -E '[0-9]+ (passed|failed|error)' "$1" | tail -n 1 | sed 's/^=* *//; s/ *=*$//'
}

# step NAME LOG COMMAND...: runs COMMAND with its output in LOG; on failure
# reports the release, the step and the end of the log, and returns 1.
step() {
  local name=$1 log=$2
  shift 2
  local start=$SECONDS code=0
  "$@" >"$log" 2>&1 || code=$?
  if ((code == 0)); then
    echo "   $name: $((SECONDS - start)) s"
    return 0
  fi
  echo "FAIL torch $RELEASE: $name (exit $code, $((SECONDS - start)) s); from ${log#"$ROOT"/}:"
  # pytest's failure summary when there is one, else the end of the log.
  if grep -q "short test summary info" "$log"; then
    sed -n '/short test summary info/,$p' "$log" | head -n 40 | sed 's/^/   | /'
  else
    tail -n 40 "$log" | sed 's/^/   | /'
  fi
  return 1
}

# The venv of one release: made once, bootstrapped (torch, the test
# modules) on every run, which installs nothing when it is complete.
venv_for() {
  local venv=$CACHE/venvs/torch-$RELEASE
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || return 1
  fi
  # The venv exists for this release: a machine-wide pip constraint that
  # caps torch below it (a machine keeping copies of older releases) does
  # not apply in it. pip reads the venv's own pip.conf last.
  printf '[global]\nconstraint = /dev/null\n' >"$venv/pip.conf"
  PYTHON=$venv/bin/python TORCH_VERSION=$RELEASE bash scripts/bootstrap.sh || return 1
  # torchvision (tests/python/test_torchvision.py): its wheels are built for
  # a CUDA torch, which these releases are. 0.29.2 is built for torch 2.14
  # and loads with 2.15.0 too (the registry has no later one); --no-deps,
  # so that it never replaces the release's torch.
  "$venv/bin/python" -c 'import torchvision, PIL' 2>/dev/null ||
    "$venv/bin/python" -m pip install -q --no-deps "$TORCHVISION" pillow || return 1
  local have
  have=$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])')
  [ "$have" = "$RELEASE" ] || { echo "the venv has torch $have, not $RELEASE"; return 1; }
}

leg() {
  local venv=$CACHE/venvs/torch-$RELEASE
  local work=$WORK_ROOT/$RELEASE
  local py=$venv/bin/python
  rm -rf "$work"
  mkdir -p "$work"
  echo "== torch $RELEASE (venv $venv, logs in ${work#"$ROOT"/})"
  step "venv" "$work/venv.log" venv_for || return 1

  # The interfaces the runtime implements and calls, against the release
  # before this one: the report in docs/upgrading/ must be current.
  local previous="" i report
  for ((i = 1; i < ${#SUPPORTED[@]}; i++)); do
    [ "${SUPPORTED[i]}" = "$RELEASE" ] && previous=${SUPPORTED[i - 1]}
  done
  report=docs/upgrading/interfaces-$previous-$RELEASE.md
  if [ -n "$previous" ]; then
    local previous_py=$CACHE/venvs/torch-$previous/bin/python
    [ "$previous" = "${SUPPORTED[0]}" ] && previous_py=python3
    if [ ! -f "$report" ]; then
      echo "FAIL torch $RELEASE: no interface report $report; write it with"
      echo "   python3 scripts/interface_diff.py $previous_py $py --out $report"
      return 1
    elif [ -x "$(command -v "$previous_py")" ]; then
      step "interface report $report is current" "$work/interfaces.log" \
        python3 scripts/interface_diff.py "$previous_py" "$py" --check "$report" || return 1
    else
      echo "   interface report: not checked, torch $previous has no venv yet (run its leg first)"
    fi
  fi

  # R's python3 first on PATH: accgen asks it where torch is, as it asks
  # the python3 of a vendor's activated venv. accgen's bin/ lets CMake find
  # accgen's package.
  local path=$venv/bin:$PREFIX/bin:$PATH

  # The example, regenerated under R: a copy of its specs (the lock records
  # the release) and of its generated tree (the manifest says what is ours).
  cp -r specs "$work/specs"
  cp -r generated_example "$work/example"
  rm -rf "$work/example/build"
  step "regenerate the example" "$work/generate.log" \
    env PATH="$path" "$ACCGEN" generate --update-lock \
    --specs "$work/specs" --out "$work/example" || return 1
  grep -q "^torch: \"$RELEASE\"" "$work/specs/accgen.lock" || {
    echo "FAIL torch $RELEASE: the regenerated lock does not record torch $RELEASE"
    return 1
  }
  # The cache's base is the project, as for the remote port below, whose
  # runtime's units then come from this build's (Note [The runtime does not
  # read the backend's configuration]).
  step "build and install the example" "$work/build.log" \
    env PATH="$path" CCACHE_BASEDIR="$work/example" \
    "$py" -m pip install -v --no-build-isolation "$work/example" || return 1

  step "conformance suite" "$work/conformance.log" \
    bash -c 'cd "$1" && shift && exec "$@"' _ "$work/example" \
    "$py" -m pytest -q -p no:cacheprovider tests/conformance -n 2 || return 1
  local conformance
  conformance=$(summary_of "$work/conformance.log")

  step "compile, distributed, library and report tests" "$work/python.log" \
    env ACCGEN_TEST_SPECS="$work/specs" "$py" -m pytest -q -p no:cacheprovider --durations=10 -n 2 --dist loadfile \
    tests/python/test_compile.py tests/python/test_distributed.py tests/python/test_torchvision.py \
    tests/python/test_integrations.py tests/python/test_report.py || return 1
  local python_tests
  python_tests=$(summary_of "$work/python.log")

  # The example ported to the remote driver (a device the host cannot
  # address), built against R by its tests, into the leg's directory.
  step "remote driver tests" "$work/remote.log" \
    env ACCGEN_BIN="$ACCGEN" ACCGEN_PREFIX="$PREFIX" PATH="$path" \
    "$py" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile \
    --basetemp="$work/remote" \
    tests/python/test_remote_backend.py tests/python/test_remote_backend_suites.py || return 1
  local remote_tests
  remote_tests=$(summary_of "$work/remote.log")

  # A new backend under R. PyTorch takes one PrivateUse1 backend per
  # process and the venv has the example: this one goes into a directory of
  # its own and is imported explicitly, with autoload off.
  step "accgen init" "$work/init.log" \
    env PATH="$path" "$ACCGEN" init second --dir "$work/second" || return 1
  if ! grep -q "torch==$RELEASE" "$work/second/pyproject.toml" ||
     ! grep -q "^torch: \"$RELEASE\"" "$work/second/specs/accgen.lock"; then
    echo "FAIL torch $RELEASE: accgen init did not pin torch $RELEASE"
    return 1
  fi
  step "build the init backend" "$work/init-build.log" \
    env PATH="$path" "$py" -m pip install -v --no-build-isolation --no-deps \
    --target "$work/second-site" "$work/second" || return 1
  step "the init backend's suite" "$work/init-tests.log" \
    env PYTHONPATH="$work/second-site" TORCH_DEVICE_BACKEND_AUTOLOAD=0 \
    "$py" -c 'import sys, torch, torch_second, pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-n", "2", sys.argv[1]]))' \
    "$work/second/tests" || return 1
  local init_tests
  init_tests=$(summary_of "$work/init-tests.log")

  echo "PASS torch $RELEASE: conformance $conformance; compile+distributed+libraries+report $python_tests; remote driver $remote_tests; init backend $init_tests"
}

status=0
passed=0
failed=0
for RELEASE in "${RELEASES[@]}"; do
  if leg; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    status=1
  fi
done
echo "== the release matrix took $((SECONDS / 60)) min $((SECONDS % 60)) s"
echo "torch releases ${RELEASES[*]}, one leg each:"
echo "releases: $passed passed, $failed failed"
exit $status
