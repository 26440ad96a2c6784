"""Reference speedups of the hpc-kernels suite, optionally side by side with another
checkout of this repository (e.g. a commit from before a harness change).

    python benchmarks/hpc_kernels_timing.py [--rounds 3] [--other /path/to/old/checkout]
        [--problems axpy,gemm] [--variants serial,openmp,mpi,mpi-openmp]

Every (sample, checkout) pair is scored in its own subprocess with sandbox concurrency 1,
interleaved round by round, so both see the same machine load. Prints the median speedup of
the last configuration per sample and checkout, their ratio, and a summary. CUDA is left out
(no GPU is assumed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PROBLEMS = "axpy gemv gemm spmv jacobi cg maxloc scan histogram".split()
VARIANTS = ["serial", "openmp", "mpi", "mpi-openmp"]

_SCORE_ONE = r"""
import asyncio, json, sys
from codegen_eval.suites.hpc_kernels import hpc_kernels_task
from codegen_eval.types import Candidate
async def main() -> None:
    problem, variant = sys.argv[1].split("/")
    (s,) = hpc_kernels_task(problems=[problem], variants=[variant]).dataset
    sc = await hpc_kernels_task().scorer.score(s, Candidate(s.id, 0, s.target))
    print(json.dumps({"status": sc.status, "metrics": sc.metrics}))
asyncio.run(main())
"""


def score(checkout: Path, sample_id: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout), CODEGEN_SANDBOX_CONCURRENCY="1")
    p = subprocess.run(
        [sys.executable, "-c", _SCORE_ONE, sample_id],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"status": "crash", "metrics": {}, "stderr": p.stderr[-500:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--other", type=Path, help="another checkout to compare with")
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    checkouts = {"this": HERE}
    if args.other:
        checkouts = {"other": args.other.resolve(), "this": HERE}
    ids = [f"{p}/{v}" for p in args.problems.split(",") for v in args.variants.split(",")]
    speedups: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for sid in ids:
            for name, root in checkouts.items():
                d = score(root, sid)
                sp = d["metrics"].get("speedup") if d["status"] == "pass" else None
                if sp is not None:
                    speedups.setdefault((sid, name), []).append(sp)
                print(f"round {r + 1} {sid:22} {name:5} {d['status']:5} speedup {sp}", flush=True)
    names = list(checkouts)
    print("\n| sample | " + " | ".join(f"{n} speedup (median)" for n in names)
          + (" | this/other |" if len(names) == 2 else " |"))  # fmt: skip
    print("|---" * (len(names) + 1 + (len(names) == 2)) + "|")
    ratios = []
    for sid in ids:
        meds = [
            statistics.median(speedups[(sid, n)]) if (sid, n) in speedups else None for n in names
        ]
        cells = [f"{m:.2f}" if m is not None else "fail" for m in meds]
        if len(names) == 2 and None not in meds:
            ratios.append(meds[1] / meds[0])  # type: ignore[operator]
            cells.append(f"{ratios[-1]:.2f}")
        print(f"| {sid} | " + " | ".join(cells) + " |")
    if ratios:
        within = sum(0.8 <= x <= 1.25 for x in ratios)
        print(f"\nratio this/other: median {statistics.median(ratios):.2f}, "
              f"range {min(ratios):.2f}-{max(ratios):.2f}, within 20%: {within}/{len(ratios)}")  # fmt: skip


if __name__ == "__main__":
    main()
