#!/usr/bin/env bash
# The main job, from a fresh machine: installs what is missing, builds
# accgen's wheel and installs it with pip into a venv, scaffolds a backend
# with `accgen init`, builds and installs it with `pip install`, and runs a
# short demo on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
NAME=${1:-mybackend}
WORK=${ACCGEN_DEMO_DIR:-$ROOT/build/demo}
export CCACHE_BASEDIR=$ROOT

bash scripts/bootstrap.sh

# --8<-- [start:demo-build-accgen]
# The path a user takes: accgen's wheel, installed with pip into an
# environment of its own; the backend built with `pip install`, pip bringing
# accgen (from the wheel's directory) and torch into an isolated build.
echo "== build accgen's wheel into $WORK/wheels"
rm -rf "$WORK/wheels" "$WORK/venv"
mkdir -p "$WORK"
"$PY" -m pip wheel -q --no-build-isolation --no-deps -w "$WORK/wheels" "$ROOT"
echo "== pip install accgen into $WORK/venv"
# Over this Python's packages: accgen reads the installed torch's schemas.
"$PY" -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --no-index --no-deps "$WORK"/wheels/accgen-*.whl
export PATH=$WORK/venv/bin:$PATH
# --8<-- [end:demo-build-accgen]

# --8<-- [start:demo-init]
echo "== accgen init $NAME"
rm -rf "$WORK/$NAME"
(cd "$WORK" && accgen init "$NAME")

echo "== accgen generate (a no-op right after init)"
(cd "$WORK/$NAME" && accgen generate)
# --8<-- [end:demo-init]

# --8<-- [start:demo-install]
echo "== pip install $NAME (build isolation) into $WORK/site"
rm -rf "$WORK/site"
"$WORK/venv/bin/python" -m pip install -q --no-deps --find-links "$WORK/wheels" \
  --target "$WORK/site" "$WORK/$NAME"
# --8<-- [end:demo-install]

echo "== demo"
cd "$WORK"
PYTHONPATH=$WORK/site TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$PY" - "$NAME" <<'PYEOF'
# --8<-- [start:demo-use]
import importlib
import sys
import torch

importlib.import_module("torch_" + sys.argv[1])

dev = sys.argv[1]
mod = getattr(torch, dev)
print(f"torch {torch.__version__}: device '{dev}', {mod.device_count()} devices")
x = torch.ones(3, device=dev) + 1
print("torch.ones(3) + 1 =", x)
a = torch.arange(6, dtype=torch.float32, device=dev).reshape(2, 3)
print("a @ a.T =", a @ a.T)
print("softmax:", torch.softmax(a, dim=1))
print("on the CPU again:", (a * 2).sum(dim=1).cpu())
# --8<-- [end:demo-use]
PYEOF
