#!/usr/bin/env bash
# Fails when a C++ file of the generator, the runtime, the emulator or the
# tests is not formatted as .clang-format says. `scripts/check_format.sh
# --fix` formats.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files 'generator/*.cpp' 'generator/*.h' \
  'runtime/*.cpp' 'runtime/*.h' 'runtime_emulator/*.cpp' 'runtime_emulator/*.h' 'runtime_remote/*.cpp' 'runtime_remote/*.h' 'tests/*.cpp' 'tests/*.h' \
  'bench/*.cpp' ':!tests/golden/*')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run -Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
