"""MPIrigen's table from its released predictions: our `mpirigen-table` against upstream's own
evaluation loop (MonoCoder/eval/finetune/evaluation_monocoder.py), on the same machine,
interleaved.

    .venv/bin/python benchmarks/mpirigen.py MPI-RIGEN-CHECKOUT --upstream-python PY [--rounds 3]

PY is a Python with upstream's imports (pandas, numpy, matplotlib, plotly), e.g. a scratch
venv: `python3 -m venv /tmp/up && /tmp/up/bin/pip install pandas numpy matplotlib plotly`.
Upstream's script is configured by constants at its top; it is run unchanged except those
lines (VARIANCE, common_core_only, FUNCTIONS_GRID=True for the 42-row tables it released,
SAVE csv only, VERBOSE 0, DATASET: a scratch directory holding the predictions under the
name it reads, results/comp700M.jsonl).

For each of the six tables (tolerance 0/1/2, all functions or MCC), each round runs both,
alternating which goes first, as fresh processes: wall and CPU (user+sys of the child) of
the whole process, and of the scoring alone (measured inside each, after the imports). Medians
over rounds. Each run's CSV is compared with the released one to 3 decimals.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codegen_eval.readers.mpirigen.metrics import compare_tables, read_table  # noqa: E402

RESULTS = Path("MonoCoder/final_results/MPI-rigen")
SCRIPT = Path("MonoCoder/eval/finetune/evaluation_monocoder.py")

# Runs inside upstream's Python: its imports first (timed apart), then its script with the
# configuration lines replaced, executed as a file under a scratch directory.
UPSTREAM_DRIVER = r"""
import json, os, re, sys, time
script, scratch, var, mcc = sys.argv[1:]
import numpy, pandas, matplotlib, plotly.express, plotly.subplots
cpu0, wall0 = time.process_time(), time.perf_counter()
src = open(script).read()
config = {
    r"^VARIANCE = .*$": f"VARIANCE = {var}",
    r"^common_core_only = .*$": f"common_core_only = {mcc}",
    r"^FUNCTIONS_GRID = .*$": "FUNCTIONS_GRID = True",
    r"^VERBOSE = .*$": "VERBOSE = 0",
    r"^DATASET = .*$": f"DATASET = {scratch!r}",
    r"^SAVE = \{[^}]*\}": "SAVE = {'csv': True, 'graph': False, 'all_graphs': False}",
}
for pattern, line in config.items():
    src, n = re.subn(pattern, line.replace("\\", "\\\\"), src, count=1, flags=re.M)
    assert n == 1, pattern
fake = os.path.join(scratch, "eval", "finetune", "evaluation_monocoder.py")
exec(compile(src, fake, "exec"), {"__name__": "__main__", "__file__": fake})
print(json.dumps({"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - wall0}))
"""

OURS_DRIVER = r"""
import json, sys, time
from codegen_eval.cli import main
from codegen_eval.readers.mpirigen import metrics
cpu0, wall0 = time.process_time(), time.perf_counter()
rc = main(sys.argv[1:])
print(json.dumps({"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - wall0,
                  "rc": rc}))
"""


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, dict]:
    cpu0, wall0 = _child_cpu(), time.perf_counter()
    cp = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    wall, cpu = time.perf_counter() - wall0, _child_cpu() - cpu0
    if cp.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed ({cp.returncode}):\n{cp.stderr[-2000:]}")
    inner = json.loads(cp.stdout.strip().splitlines()[-1])
    return wall, cpu, inner


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--upstream-python", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    preds = args.checkout / RESULTS / "bpe_1000_examples.jsonl"
    work = Path(tempfile.mkdtemp(prefix="mpirigen-bench-"))
    (work / "results").mkdir()
    (work / "eval" / "outputs").mkdir(parents=True)
    shutil.copy(preds, work / "results" / "comp700M.jsonl")
    samples: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    matches: dict[tuple[str, str], set[bool]] = {}
    for rnd in range(args.rounds):
        for var in (0, 1, 2):
            for mcc in (False, True):
                name = f"scores_var_{var}{'_MCC' if mcc else ''}.csv"
                released = read_table(args.checkout / RESULTS / name)
                ours_csv = work / f"ours_{name}"
                runs = {
                    "ours": [sys.executable, "-c", OURS_DRIVER, "mpirigen-table",
                             "--predictions", str(preds), "--tolerance", str(var),
                             *(["--mcc"] if mcc else []), "--csv", str(ours_csv)],
                    "upstream": [args.upstream_python, "-c", UPSTREAM_DRIVER,
                                 str(args.checkout / SCRIPT), str(work), str(var), str(mcc)],
                }  # fmt: skip
                order = ["ours", "upstream"] if (rnd + var) % 2 == 0 else ["upstream", "ours"]
                for who in order:
                    wall, cpu, inner = timed(runs[who], ROOT)
                    samples.setdefault((name, who), []).append(
                        (wall, cpu, inner["wall"], inner["cpu"])
                    )
                    out = ours_csv if who == "ours" else work / "eval" / "outputs" / name
                    same = not compare_tables(read_table(out), released)
                    matches.setdefault((name, who), set()).add(same)
    print(f"{'table':22s} {'who':9s} {'wall s':>7s} {'cpu s':>7s} {'score wall':>10s} "
          f"{'score cpu':>9s}  equals released (3 dp)")  # fmt: skip
    totals = {"ours": [0.0, 0.0, 0.0, 0.0], "upstream": [0.0, 0.0, 0.0, 0.0]}
    for (name, who), rows in samples.items():
        med = [statistics.median(col) for col in zip(*rows, strict=True)]
        spread = max(r[1] for r in rows) - min(r[1] for r in rows)
        totals[who] = [a + b for a, b in zip(totals[who], med, strict=True)]
        ok = "yes" if matches[(name, who)] == {True} else "NO"
        print(f"{name:22s} {who:9s} {med[0]:7.2f} {med[1]:7.2f} {med[2]:10.2f} {med[3]:9.2f}"
              f"  {ok}   (cpu spread {spread:.2f})")  # fmt: skip
    for who, t in totals.items():
        print(f"{'all six':22s} {who:9s} {t[0]:7.2f} {t[1]:7.2f} {t[2]:10.2f} {t[3]:9.2f}")
    ratio = totals["ours"][1] / totals["upstream"][1]
    print(
        f"CPU ours/upstream, whole process: {ratio:.2f}x; scoring alone: "
        f"{totals['ours'][3] / totals['upstream'][3]:.2f}x ({args.rounds} rounds, medians)"
    )
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
