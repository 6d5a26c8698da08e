#!/usr/bin/env bash
# Installs what accgen needs and is missing: Debian packages for the C++
# dependencies and the pinned torch wheel. Idempotent: a second run installs
# nothing.
set -euo pipefail

# --8<-- [start:torch-pin]
# The pinned torch is the first release of torch_releases.txt. TORCH_VERSION
# names another one for another Python (PYTHON=): the release matrix
# (scripts/test_releases.sh) bootstraps each release's venv this way.
TORCH_VERSION=${TORCH_VERSION:-$(grep -m1 '^[0-9]' "$(dirname "$0")/../torch_releases.txt")}
readonly TORCH_VERSION
# --8<-- [end:torch-pin]
readonly DEB_PACKAGES=(
  cmake ninja-build g++ ccache clang-format clang-tidy clang-14 libclang-rt-14-dev
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libgtest-dev
  libkainjow-mustache-dev libdtl-dev libxxhash-dev robin-map-dev
)

missing=()
for pkg in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
have=$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)
if [ "$have" != "$TORCH_VERSION" ]; then
  echo "bootstrap: installing torch==$TORCH_VERSION"
  "$PY" -m pip install -q "torch==$TORCH_VERSION"
fi
# expecttest: torch.testing._internal (the OpInfo database) imports it.
# xdist: the generated conformance suites shard over devices with -n.
# clang: libclang, with which scripts/interface_diff.py reads torch's headers.
# transformers (pure Python, with safetensors): real model code in the tests.
# wheel: DeepSpeed (below) is built without build isolation.
readonly TRANSFORMERS=transformers==5.24.0
for mod in wheel pytest yaml scikit_build_core pybind11 ninja numpy expecttest xdist clang transformers; do
  "$PY" -c "import $mod" 2>/dev/null || {
    pkg=$mod; [ "$mod" = yaml ] && pkg=PyYAML; [ "$mod" = scikit_build_core ] && pkg=scikit-build-core
    [ "$mod" = xdist ] && pkg=pytest-xdist; [ "$mod" = clang ] && pkg=libclang
    [ "$mod" = transformers ] && pkg=$TRANSFORMERS
    echo "bootstrap: installing $pkg"; "$PY" -m pip install -q "$pkg"; }
done

# --8<-- [start:integrations]
# The libraries users train with (tests/python/test_integrations.py,
# docs/guide/), pinned, pure Python. DeepSpeed's setup imports torch, so it
# is built against the torch installed here (no build isolation), with none
# of its ops compiled; the same command pins that torch, so that nothing
# replaces it.
readonly INTEGRATIONS=(deepspeed==0.19.8 lightning==2.6.6 accelerate==1.16.0 peft==0.21.2)
missing=()
for req in "${INTEGRATIONS[@]}"; do
  have=$("$PY" -c "import importlib.metadata as m; print(m.version('${req%%==*}'))" 2>/dev/null || true)
  [ "$have" = "${req##*==}" ] || missing+=("$req")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  DS_BUILD_OPS=0 "$PY" -m pip install -q --no-build-isolation "${missing[@]}" \
    "torch==$TORCH_VERSION" "$TRANSFORMERS"
fi
# --8<-- [end:integrations]
