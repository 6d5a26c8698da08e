#!/usr/bin/env bash
# Builds the documentation site into site/ with `mkdocs build --strict` (a
# broken link, a missing file or a missing snippet section fails it) and
# checks what ties the pages to the code (scripts/check_doc_markers.py:
# unbalanced, stale or misplaced snippet markers; Notes cited but not
# defined, defined twice or defined in docs/; a work log's phrases in
# docs/), and that the published reports' pages are made from their data
# (scripts/publish_reports.py).
# Installs the pinned tools of docs/requirements.txt when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

missing=0
while read -r requirement; do
  case "$requirement" in '' | '#'*) continue ;; esac
  name=${requirement%%==*}
  want=${requirement#*==}
  have=$("$PY" -c "import importlib.metadata as m; print(m.version('$name'))" \
    2>/dev/null || true)
  [ "$have" = "$want" ] || missing=1
done <docs/requirements.txt
if [ "$missing" = 1 ]; then
  echo "installing the documentation tools (docs/requirements.txt)"
  "$PY" -m pip install -q -r docs/requirements.txt
fi

"$PY" scripts/check_doc_markers.py
"$PY" scripts/publish_reports.py --check
"$PY" -m mkdocs build --strict --quiet
echo "check_docs: the site builds (site/index.html)"
