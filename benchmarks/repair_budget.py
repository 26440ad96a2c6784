"""Repair vs plain sampling at equal budget, on the local model: `generate -n R` and
`--solver repair --solver-opt rounds=R` on the same problems, the two runs side by side (so
both see the same machine load), then the table: pass within 1..R model calls, problems
solved, tokens per solved problem, wall time and load averages.

    python benchmarks/repair_budget.py --suite verilog --model local -R 3 --out runs/measure
    python benchmarks/repair_budget.py --suite hpc-kernels --filter '*/[smo]*' ...  # no CUDA
    python benchmarks/repair_budget.py --table runs/measure/verilog-local   # print only

Runs resume: started again with the same --out, each log continues where it stopped. The
table counts only problems finished in both runs (and says how many that is), so a run cut
off by time is compared like for like. Wall times and `uptime` load averages are appended to
<out>/<suite>-<model>.times.jsonl per invocation (also when it is stopped with Ctrl-C or
SIGTERM: the runs get SIGINT, keep what they scored, and the line says `"stopped": true`).

A run longer than one machine's life goes on elsewhere with --archive DIR: missing logs are
restored from DIR's gzipped copies before the runs start, and the copies are refreshed as the
logs grow (at most every 30 s) and at the end; commit DIR and the next machine resumes.
`--table STEM --archive DIR` saves STEM's logs to DIR without running anything.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codegen_eval.budget import budget_of  # noqa: E402
from codegen_eval.log import read_log  # noqa: E402


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _run_pair(args: argparse.Namespace, stem: Path) -> dict[str, object]:
    common = ["--suite", args.suite, "--model", args.model, "--max-tokens", str(args.max_tokens),
              "--max-generations", "2", "--no-progress", "--seed", str(args.seed)]  # fmt: skip
    if args.filter:
        common += ["--filter", args.filter]
    if args.limit:
        common += ["--limit", str(args.limit)]
    r = str(args.rounds)
    jobs = {
        "generate": ["-n", r, "-k", ",".join(str(i) for i in range(1, args.rounds + 1))],
        "repair": ["--solver", "repair", "--solver-opt", f"rounds={r}"],
    }
    for opt in args.solver_opt or []:
        jobs["repair"] += ["--solver-opt", opt]
    if args.repair_only:
        del jobs["generate"]
    procs = {}
    started = time.monotonic()
    load_start = _load()
    for name, extra in jobs.items():
        log = Path(f"{stem}.{name}.jsonl")
        argv = [sys.executable, "-m", "codegen_eval.cli", "run", "--log", str(log)]
        # a resumed run takes its options from the log
        argv += ["--resume"] if log.exists() and log.stat().st_size else [*common, *extra]
        out = open(f"{stem}.{name}.out", "a")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=out)
        procs[name] = (proc, out, time.monotonic())
    walls: dict[str, float] = {}
    rcs: dict[str, int] = {}
    stopped: list[int] = []

    def stop(signum: int, _frame: object) -> None:  # Ctrl-C or SIGTERM: the runs keep their work
        stopped.append(signum)
        for proc, _out, _t0 in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    saved_at, saved_sizes = 0.0, dict[str, int]()
    try:
        while len(walls) < len(procs):
            for name, (proc, out, t0) in procs.items():
                if name not in walls and proc.poll() is not None:
                    walls[name] = round(time.monotonic() - t0, 1)
                    rcs[name] = proc.returncode
                    out.close()
            if args.archive and time.monotonic() - saved_at >= 30:
                save_archive(stem, Path(args.archive), saved_sizes)
                saved_at = time.monotonic()
            time.sleep(2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return {
        "suite": args.suite,
        "model": args.model,
        "started": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - (time.monotonic() - started))
        ),
        "wall_s": walls,
        "rc": rcs,
        "load_start": load_start,
        "load_end": _load(),
        **({"stopped": True} if stopped else {}),
    }


def _archived(stem: Path, archive: Path, name: str) -> Path:
    return archive / f"{stem.name}.{name}.jsonl.gz"


def save_archive(stem: Path, archive: Path, saved: dict[str, int] | None = None) -> None:
    """Gzipped copies of the run logs (and the times file) in `archive`. `saved` remembers
    the sizes already copied, so an unchanged log is not compressed again. Each copy is
    written aside and renamed: it is never half written."""
    archive.mkdir(parents=True, exist_ok=True)
    saved = {} if saved is None else saved
    for name in ("generate", "repair"):
        log = Path(f"{stem}.{name}.jsonl")
        if not log.exists() or saved.get(name) == log.stat().st_size:
            continue
        size = log.stat().st_size
        dest = _archived(stem, archive, name)
        tmp = dest.with_name(dest.name + ".tmp")
        with open(log, "rb") as src, gzip.open(tmp, "wb", compresslevel=9) as gz:
            shutil.copyfileobj(src, gz)
        os.replace(tmp, dest)
        saved[name] = size
    times = Path(f"{stem}.times.jsonl")
    if times.exists():
        shutil.copyfile(times, archive / times.name)


def restore_archive(stem: Path, archive: Path) -> list[str]:
    """Logs missing from --out (a new machine) come back from the archive; a local log that
    already exists is the newer one and is kept."""
    restored = []
    for name in ("generate", "repair"):
        log, src = Path(f"{stem}.{name}.jsonl"), _archived(stem, archive, name)
        if src.exists() and not (log.exists() and log.stat().st_size):
            with gzip.open(src, "rb") as gz, open(log, "wb") as dst:
                shutil.copyfileobj(gz, dst)
            restored.append(log.name)
    times, saved_times = Path(f"{stem}.times.jsonl"), archive / f"{stem.name}.times.jsonl"
    if saved_times.exists() and not times.exists():
        shutil.copyfile(saved_times, times)
    return restored


def table(stem: Path) -> str:
    logs = {name: Path(f"{stem}.{name}.jsonl") for name in ("generate", "repair")}
    records = {}
    for name, path in logs.items():
        if not path.exists():
            return f"{path}: missing"
        records[name] = read_log(path).score_records
    # problems finished in both: every candidate scored (generate: n of them; repair: n)
    done: dict[str, set[str]] = {}
    for name, recs in records.items():
        n = int(read_log(logs[name]).header.get("n") or 1)
        per: dict[str, int] = defaultdict(int)
        for r in recs:
            per[r["sample_id"]] += 1
        done[name] = {sid for sid, count in per.items() if count >= n}
    common = done["generate"] & done["repair"]
    lines = [f"{stem.name}: {len(common)} problems finished in both runs "
             f"(generate {len(done['generate'])}, repair {len(done['repair'])})"]  # fmt: skip
    head = None
    for name, recs in records.items():
        b = budget_of([r for r in recs if r["sample_id"] in common])
        if b is None:
            lines.append(f"  {name}: nothing scored")
            continue
        if head is None:
            head = "  solver     " + " ".join(f"pass<={c:<3}" for c in b.pass_within) + \
                "  solved  calls  tokens/solved"  # fmt: skip
            lines.append(head)
        per = " ".join(f"{(v or 0):>8.3f}" for v in b.pass_within.values())
        tps = f"{b.tokens_per_solved:.0f}" if b.tokens_per_solved else "-"
        lines.append(f"  {name:<10} {per}  {b.solved:>3}/{b.problems:<3} {b.calls:>5}  {tps:>8}")
    times = Path(f"{stem}.times.jsonl")
    if times.exists():
        for line in times.read_text().splitlines():
            lines.append(f"  run: {line}")
    return "\n".join(lines)


def details(stem: Path) -> str:
    """Per problem: generate's samples and repair's rounds; then what the repair rounds did
    (failure class before -> after, and rounds that repeated the previous code exactly)."""
    gen = read_log(Path(f"{stem}.generate.jsonl")).score_records
    rep = read_log(Path(f"{stem}.repair.jsonl")).score_records
    rows: dict[str, list[str]] = defaultdict(lambda: ["", ""])
    for r in sorted(gen, key=lambda r: r["index"]):
        out = "pass" if r["status"] == "pass" else str(r.get("failure_class") or r["status"])
        rows[r["sample_id"]][0] += ("; " if rows[r["sample_id"]][0] else "") + out
    moves: dict[str, int] = defaultdict(int)
    repeats = repairs = 0
    for r in rep:
        hist = (r.get("candidate") or {}).get("history") or []
        labels = [h["failure_class"] or h["status"] for h in hist]
        rows[r["sample_id"]][1] = " -> ".join(labels)
        for before, after in itertools.pairwise(hist):
            repairs += 1
            a = str(before["failure_class"] or before["status"]).split(":")[0]
            b = str(after["failure_class"] or after["status"]).split(":")[0]
            moves[f"{a} -> {b}"] += 1
            repeats += bool(before.get("code_sha")) and before.get("code_sha") == after.get(
                "code_sha"
            )
    lines = [f"{sid:<28} gen: {g:<60} repair: {rp}" for sid, (g, rp) in rows.items()]
    lines.append(f"repair rounds: {repairs}; same code as the round before: {repeats}")
    lines += [f"  {k}: {v}" for k, v in sorted(moves.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite")
    ap.add_argument("--model", default="local")
    ap.add_argument("-R", "--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=768)
    ap.add_argument("--seed", type=int, default=0,
                    help="both runs' seed: another draw of the same comparison")  # fmt: skip
    ap.add_argument("--filter")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--out", default="runs/measure")
    ap.add_argument(
        "--solver-opt",
        action="append",
        metavar="KEY=VALUE",
        help="another repair option (e.g. restart_on_repeat=true); repeatable",
    )
    ap.add_argument(
        "--repair-only",
        action="store_true",
        help="run only the repair side (generate's log is already in --out)",
    )
    ap.add_argument(
        "--archive",
        metavar="DIR",
        help="restore missing logs from DIR's gzipped copies, and keep those copies up to date",
    )
    ap.add_argument("--table", metavar="STEM", help="only print the table of <STEM>.*.jsonl")
    ap.add_argument("--details", action="store_true", help="with --table: per problem, per round")
    args = ap.parse_args()
    if args.table:
        if args.archive:
            save_archive(Path(args.table), Path(args.archive))
        print(table(Path(args.table)))
        if args.details:
            print(details(Path(args.table)))
        return 0
    if not args.suite:
        ap.error("--suite is required (or --table STEM)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{args.suite}-{args.model}"
    if args.archive:
        for name in restore_archive(stem, Path(args.archive)):
            print(f"restored {out / name} from {args.archive}", flush=True)
    info = _run_pair(args, stem)
    with open(f"{stem}.times.jsonl", "a") as fh:
        fh.write(json.dumps(info) + "\n")
    if args.archive:
        save_archive(stem, Path(args.archive))
    print(table(stem))
    return 0 if all(rc == 0 for rc in info["rc"].values()) else 1  # type: ignore[attr-defined]


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main())
