"""Scoring throughput through Inspect AI versus through `codegen-eval run`, same candidates.

The candidates are the references of the verilog and omp-pragma suites, each in R variants
that differ by a trailing comment (`// variant i`), so every candidate is really scored (both
paths score identical candidates once). Each round runs, per suite, `codegen-eval run --solver
file` and `inspect eval codegen_eval/<suite> -T solver=file --epochs R` on the same samples
file, in alternating order (interleaved, so a change of machine load hits both); each is a
fresh process, timed by wall clock and by the CPU time of the process tree. Both score with
the same concurrency (`--max-sandboxes` / `-T max_sandboxes`, default the CPU count).

Each full run is paired with a one-candidate run of the same tool (start-up: imports, suite
construction, the sandbox probe, Inspect's log set-up), so the table shows the whole command
and the scoring throughput without start-up: (N - 1) / (T_full - T_one).

    .venv/bin/python benchmarks/inspect_overhead.py [--repeats 4] [--rounds 3]

Prints per-suite medians and the throughput ratio Inspect / ours (1.00 = same candidates per
second; the target is >= 0.90). Every candidate must pass on both paths, or the run stops.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SUITES = {"verilog": "verilog", "omp-pragma": "omp_pragma"}
INSPECT_ARGS: list[str] = []  # --inspect-arg: more options of `inspect eval`


def write_samples(suite: str, repeats: int, path: Path, first_only: bool = False) -> int:
    from codegen_eval.registry import get_suite

    count = 0
    dataset = list(get_suite(suite).dataset)
    with path.open("w", encoding="utf-8") as fh:
        for sample in dataset[:1] if first_only else dataset:
            for i in range(repeats):
                code = f"{sample.target.rstrip()}\n// variant {i}\n"
                fh.write(json.dumps({"sample_id": sample.id, "index": i, "code": code}) + "\n")
                count += 1
    return count


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall s, CPU s of the process tree, output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cp = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if cp.returncode != 0:
        raise SystemExit(
            f"failed ({cp.returncode}): {' '.join(cmd)}\n{cp.stdout[-2000:]}{cp.stderr[-2000:]}"
        )
    return wall, cpu, cp.stdout


def ours(
    suite: str, samples: Path, repeats: int, jobs: int, work: Path, tag: str
) -> tuple[float, float]:
    from codegen_eval.log import read_log

    log = work / f"ours-{suite}-{tag}.jsonl"
    cmd = [str(BIN / "codegen-eval"), "run", "--suite", suite, "--samples", str(samples),
           "-n", str(repeats), "--max-sandboxes", str(jobs), "--log", str(log), "--no-progress"]  # fmt: skip
    if tag.endswith("one"):  # the start-up run: the first problem only
        cmd += ["--limit", "1"]
    wall, cpu, _ = timed(cmd, work)
    records = read_log(log).score_records
    bad = [r for r in records if r["status"] != "pass"]
    if bad:
        raise SystemExit(
            f"ours: {len(bad)} candidates did not pass, e.g. {bad[0]['explanation'][:300]}"
        )
    return wall, cpu


def inspect(
    suite: str, samples: Path, repeats: int, jobs: int, work: Path, tag: str
) -> tuple[float, float]:
    from inspect_ai.log import read_eval_log

    logs = work / f"inspect-{suite}-{tag}"
    cmd = [str(BIN / "inspect"), "eval", f"codegen_eval/{SUITES[suite]}", "-T", "solver=file",
           "-T", f"samples={samples}", "-T", f"max_sandboxes={jobs}", "--epochs", str(repeats),
           "--model", "mockllm/model", "--log-dir", str(logs), "--display", "none"]  # fmt: skip
    if tag.endswith("one"):
        cmd += ["-T", "limit=1"]
    cmd += INSPECT_ARGS
    wall, cpu, _ = timed(cmd, work)
    (path,) = logs.glob("*.eval")
    log = read_eval_log(str(path))
    values = [s.scores["codegen_verdict"].value for s in log.samples or []]
    if log.status != "success" or any(v != "C" for v in values):
        raise SystemExit(
            f"inspect: status {log.status}, {sum(v != 'C' for v in values)} not correct"
        )
    return wall, cpu


def _median(values: list[float]) -> float:
    return statistics.median(values)


def report(suites: list[str], counts: dict[str, int], runs: dict, args: argparse.Namespace) -> None:
    print()
    print(f"load average now: {os.getloadavg()[0]:.1f}; jobs {args.jobs}; repeats {args.repeats}; "
          f"rounds {args.rounds} (medians, range)")  # fmt: skip
    totals = {(n, m): 0.0 for n in ("ours", "inspect") for m in ("wall", "cpu", "mwall", "mcpu")}
    for s in suites:
        n = counts[s]
        for name in ("ours", "inspect"):
            full, one = runs[(s, name, "full")], runs[(s, name, "one")]
            wall, cpu = _median([f[0] for f in full]), _median([f[1] for f in full])
            # scoring without start-up: each full run minus its own round's one-candidate run
            mwall = _median([f[0] - o[0] for f, o in zip(full, one, strict=True)])
            mcpu = _median([f[1] - o[1] for f, o in zip(full, one, strict=True)])
            for key, v in (("wall", wall), ("cpu", cpu), ("mwall", mwall), ("mcpu", mcpu)):
                totals[(name, key)] += v
            print(f"{s:10} {name:7} whole command: wall {wall:6.1f} s "
                  f"({min(f[0] for f in full):.1f}-{max(f[0] for f in full):.1f}), cpu {cpu:6.1f} s; "
                  f"start-up cpu {_median([o[1] for o in one]):4.1f} s; scoring: "
                  f"{(n - 1) / mcpu:6.2f} candidates per cpu-s, {(n - 1) / mwall:5.2f} per wall-s")  # fmt: skip
        _ratios(s, {k: v for k, v in _suite_figures(runs, s).items()})
    print("all suites:")
    _ratios("all", totals)


def _suite_figures(runs: dict, s: str) -> dict[tuple[str, str], float]:
    out = {}
    for name in ("ours", "inspect"):
        full, one = runs[(s, name, "full")], runs[(s, name, "one")]
        out[(name, "wall")] = _median([f[0] for f in full])
        out[(name, "cpu")] = _median([f[1] for f in full])
        out[(name, "mwall")] = _median([f[0] - o[0] for f, o in zip(full, one, strict=True)])
        out[(name, "mcpu")] = _median([f[1] - o[1] for f, o in zip(full, one, strict=True)])
    return out


def _ratios(label: str, t: dict[tuple[str, str], float]) -> None:
    """Throughput of Inspect relative to ours (time ours / time Inspect; 1.00 = equal)."""
    print(f"{label:10} throughput Inspect/ours: whole command wall {t[('ours', 'wall')] / t[('inspect', 'wall')]:.2f}, "
          f"cpu {t[('ours', 'cpu')] / t[('inspect', 'cpu')]:.2f}; scoring without start-up "
          f"wall {t[('ours', 'mwall')] / t[('inspect', 'mwall')]:.2f}, "
          f"cpu {t[('ours', 'mcpu')] / t[('inspect', 'mcpu')]:.2f}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=4, help="variants per reference (epochs)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--suite", action="append", choices=sorted(SUITES), help="default: both")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="scorings at once")
    ap.add_argument(
        "--inspect-arg",
        action="append",
        default=[],
        help="an option for `inspect eval`, repeatable, e.g. --inspect-arg=--no-log-realtime",
    )
    args = ap.parse_args()
    INSPECT_ARGS.extend(args.inspect_arg)
    suites = args.suite or list(SUITES)
    with tempfile.TemporaryDirectory(prefix="inspect-overhead-") as tmp:
        work = Path(tmp)
        files = {s: work / f"{s}.jsonl" for s in suites}
        ones = {s: work / f"{s}-one.jsonl" for s in suites}
        counts = {s: write_samples(s, args.repeats, files[s]) for s in suites}
        for s in suites:
            write_samples(s, 1, ones[s], first_only=True)
        runs: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
        for r in range(args.rounds):
            for s in suites:
                order = [("ours", ours), ("inspect", inspect)]
                for name, fn in order if r % 2 == 0 else order[::-1]:
                    full = fn(s, files[s], args.repeats, args.jobs, work, f"{r}")
                    one = fn(s, ones[s], 1, args.jobs, work, f"{r}-one")
                    runs.setdefault((s, name, "full"), []).append(full)
                    runs.setdefault((s, name, "one"), []).append(one)
                    print(f"round {r + 1} {s:10} {name:7} {counts[s]} candidates: wall {full[0]:6.1f} s, "
                          f"cpu {full[1]:6.1f} s; one candidate: wall {one[0]:5.1f} s, cpu {one[1]:5.1f} s",
                          flush=True)  # fmt: skip
        report(suites, counts, runs, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
