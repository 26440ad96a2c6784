#!/bin/bash
# hpc-kernels: does a work-after-done candidate get its late work past the timed window on a
# loaded machine? Starts BUSY busy loops (nice 0), runs the adversarial test
# test_work_after_done_does_not_count RUNS times, and prints how many runs held (every late
# work either not done at the stop, or timed: a pass no faster than 3x) and how many did not.
#
#   benchmarks/hpck_stop_under_load.sh [RUNS=5] [BUSY=4]
#
# Measured 2026-11-24 on 2 cores, BUSY=8: before the guard's nice 19, 1 of 20 runs let the
# stop-host candidate pass; after, 0 of 40 (docs/suite-hpc-kernels.md, Limits). Since the host
# stops the candidate before reading its clock, a late pass is timed and the test accepts it;
# measured 2026-11-25, BUSY=8 (load 6.5-9): 52 of 52 runs held.
set -u
cd "$(dirname "$0")/.."
runs=${1:-5}
busy=${2:-4}
pids=()
for _ in $(seq 1 "$busy"); do (exec yes > /dev/null) & pids+=($!); done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
sleep 2
caught=0
passed=0
for i in $(seq 1 "$runs"); do
  log=$(mktemp)
  if .venv/bin/python -m pytest -q -p no:cacheprovider \
      "tests/codegen_eval/suites/test_hpc_kernels_adversarial.py::test_work_after_done_does_not_count" \
      > "$log" 2>&1; then
    caught=$((caught + 1))
  else
    passed=$((passed + 1))
    grep -h "^FAILED\|AssertionError: np" "$log" | head -2
  fi
  rm -f "$log"
done
echo "runs that held: $caught; runs where late work escaped (or another failure): $passed;" \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
