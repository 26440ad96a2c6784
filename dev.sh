#!/usr/bin/env bash
# The project's two entry points (see README.md):
#   ./dev.sh main   set everything up, then run the main job on the embedded defaults
#   ./dev.sh test   set everything up, then run the whole test suite
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
cmd="${1:-}"; shift || true
case "$cmd" in
  main)
    scripts/setup.sh --local-model
    exec .venv/bin/python -m codegen_eval.main_job "$@"
    ;;
  test)
    scripts/setup.sh --local-model
    # the project's habits first: a lint or format error fails the run before any test
    .venv/bin/ruff check . || { echo "dev.sh test: ruff check failed (ruff check --fix .)" >&2; exit 1; }
    .venv/bin/ruff format --check . >/dev/null \
      || { echo "dev.sh test: files need formatting (ruff format .)" >&2; exit 1; }
    # strict types on appl and sandboxes ([tool.mypy] in pyproject.toml)
    .venv/bin/python -m mypy || { echo "dev.sh test: mypy found type errors" >&2; exit 1; }
    set +e
    .venv/bin/python -m pytest -q -ra "$@"
    rc=$?
    # pytest exits 5 when it collected no test: that is a failure of the suite, not a pass.
    exit $rc
    ;;
  *)
    echo "usage: ./dev.sh main | ./dev.sh test [pytest args]" >&2
    exit 2
    ;;
esac
