#!/usr/bin/env bash
# Lints the backend runtime (runtime/) with clang-tidy and runtime/.clang-tidy,
# on the units the runtime's test backend compiles (tests/runtime, built by
# the default preset), so the runtime is checked against the pinned torch
# exactly as backends compile it. The precompiled header is gcc's and left
# out; clang reads the headers themselves.
#
#   scripts/lint_runtime.sh [build dir, default build]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The commands of the test backend's units, without the precompiled header;
# prints the units.
mapfile -t units < <(python3 - "$build/compile_commands.json" \
  "$work/compile_commands.json" <<'PY'
import json
import shlex
import sys

source, target = sys.argv[1], sys.argv[2]
kept = []
for entry in json.load(open(source)):
    # The runtime's units (accgen_runtime) and the test backend's own,
    # src/Config.cpp among them.
    if not any(t in entry["command"] for t in ("/accgen_runtime.dir/", "/torch_rtest.dir/")):
        continue
    args = shlex.split(entry["command"])
    out = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "-include":
            skip = True
            continue
        if arg == "-Winvalid-pch" or arg.endswith("ccache"):
            continue
        out.append(arg)
    entry["command"] = shlex.join(out)
    kept.append(entry)
if not kept:
    sys.exit(f"{source}: no unit of the runtime's test backend; build the default preset first")
json.dump(kept, open(target, "w"), indent=1)
print("\n".join(e["file"] for e in kept))
PY
)
# A failure inside the substitution leaves no units.
((${#units[@]})) || exit 1
echo "== clang-tidy: ${#units[@]} units of runtime/"
# Two at a time: each unit parses ATen's headers on one core. xargs exits
# non-zero when any unit has a finding.
printf '%s\0' "${units[@]}" |
  xargs -0 -P 2 -n 1 clang-tidy -p "$work" --quiet --config-file=runtime/.clang-tidy
echo "lint: runtime clean"
