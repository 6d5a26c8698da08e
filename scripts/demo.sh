#!/usr/bin/env bash
# The main job, from a fresh machine: installs what is missing, builds and
# installs accgen (with the emulator), scaffolds a backend with `accgen init`,
# builds and installs it, and runs a short demo on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
NAME=${1:-mybackend}
WORK=${ACCGEN_DEMO_DIR:-$ROOT/build/demo}
export CCACHE_BASEDIR=$ROOT

bash scripts/bootstrap.sh

# --8<-- [start:demo-build-accgen]
echo "== build and install accgen into build/install"
cmake --preset default >/dev/null
cmake --build --preset default -j2 --target accgen accgen_emulator accgen_remote
cmake --install build --prefix build/install >/dev/null
ACCGEN=$ROOT/build/install/bin/accgen
# --8<-- [end:demo-build-accgen]

# --8<-- [start:demo-init]
echo "== accgen init $NAME"
rm -rf "$WORK/$NAME"
mkdir -p "$WORK"
(cd "$WORK" && "$ACCGEN" init "$NAME")

echo "== accgen generate (a no-op right after init)"
(cd "$WORK/$NAME" && "$ACCGEN" generate)
# --8<-- [end:demo-init]

# PyTorch takes one PrivateUse1 backend per process, and `import torch`
# loads every installed backend: the demo's backend goes into a directory of
# its own (build/demo/site) so that it never meets another one installed in
# this Python, and the demo imports it explicitly. A plain
# `pip install --no-build-isolation DIR` is what a backend's users run.
# --8<-- [start:demo-install]
echo "== build and install torch_$NAME into $WORK/site"
rm -rf "$WORK/site"
export PATH=$ROOT/build/install/bin:$PATH
"$PY" -m pip install -q --no-deps --no-build-isolation --target "$WORK/site" \
  "$WORK/$NAME"
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
