# Shared by the setup scripts (sourced, not run).
say() { printf '\033[1;34m[setup]\033[0m %s\n' "$*" >&2; }
# Installers are chatty; keep their output in a log and show it only when they fail.
LOG="${LOG:-${TMPDIR:-/tmp}/codegen-lab-setup.log}"
export LOG
quiet() {
  if ! "$@" >>"$LOG" 2>&1; then
    echo "$(basename "$0"): '$*' failed; its output (from $LOG):" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}
