"""Sandbox overhead: exec latency over a raw subprocess, and compile+run throughput.

    .venv/bin/python benchmarks/sandbox_overhead.py [--reps 40] [--jobs 200]
        [--backend bwrap,docker] [--launchers c,python] [--docker-jobs 40]

Raw and sandboxed runs are interleaved (raw, sandboxed with each launch path, raw, ...) so
machine noise hits all alike; the overhead is reported as the median (and p10/p90) of
per-pair differences. Launch paths ($CODEGEN_SANDBOX_LAUNCHER, bwrap and unsafe-local only):
"c" (default: the vfork'd C launcher) and "python" (the old preexec_fn fork). The docker
backend (one container per exec) is measured the same way when an engine and the image are
there (scripts/docker-local.sh up), with fewer throughput jobs; without them it is reported
as not measured. The load average is printed with the figures: this machine is shared and
noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from sandboxes import Limits, SandboxError, concurrency, open_sandbox, toolchains

HELLO = '#include <stdio.h>\nint main(void){ puts("hello"); return 0; }\n'
JOB = (
    "#include <stdio.h>\nint main(void){ long s = 0; for (int i = 0; i < 100000; i++) s += i;"
    ' printf("%ld\\n", s); return 0; }\n'
)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


async def raw(cmd: list[str], cwd: str) -> float:
    t = time.perf_counter()
    p = await asyncio.create_subprocess_exec(
        *cmd, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    await p.communicate()
    return time.perf_counter() - t


async def overhead(backend: str, reps: int, launchers: list[str]) -> None:
    print(f"load average before: {os.getloadavg()}")
    if backend == "docker":
        launchers = ["-"]  # the launcher is bwrap's and unsafe-local's, not docker's
    async with open_sandbox(backend) as sb:
        b = await toolchains.get("c").compile(sb, {"hello.c": HELLO}, output="hello")
        assert b.ok, b.exec_result.stderr
        cwd = str(sb.run_dir)
        for label, raw_cmd, sb_cmd in (
            ("/bin/true", ["/bin/true"], ["/bin/true"]),
            ("C hello", [f"{cwd}/hello"], ["./hello"]),
        ):
            raws: list[float] = []
            sbs: dict[str, list[float]] = {k: [] for k in launchers}
            diffs: dict[str, list[float]] = {k: [] for k in launchers}
            for i in range(reps + 3):
                for mode in launchers:
                    r = await raw(raw_cmd, cwd)
                    if mode != "-":
                        os.environ["CODEGEN_SANDBOX_LAUNCHER"] = mode
                    t = time.perf_counter()
                    res = await sb.exec(sb_cmd, limits=Limits(wall_s=10))
                    s = time.perf_counter() - t
                    assert res.ok, res
                    if i >= 3:  # warm-up
                        raws.append(r)
                        sbs[mode].append(s)
                        diffs[mode].append(s - r)
            os.environ.pop("CODEGEN_SANDBOX_LAUNCHER", None)
            for mode in launchers:
                ms = [1000 * x for x in diffs[mode]]
                print(
                    f"{backend:>12} {label:<10} launcher={mode:<6} raw median "
                    f"{1000 * statistics.median(raws):5.1f} ms | sandboxed median "
                    f"{1000 * statistics.median(sbs[mode]):5.1f} ms | overhead median "
                    f"{statistics.median(ms):5.1f} ms (p10 {pct(ms, 0.1):5.1f}, "
                    f"p90 {pct(ms, 0.9):5.1f})"
                )
    print(f"load average after: {os.getloadavg()}")


async def throughput(backend: str, jobs: int) -> None:
    rec = toolchains.get("c")

    async def one(i: int) -> bool:
        async with open_sandbox(backend) as sb:
            b = await rec.compile(
                sb, {"job.c": JOB.replace("100000", str(100000 + i))}, output="job"
            )
            if not b.ok:
                return False
            r = await rec.run(sb, b.artifact)
            return r.ok and r.stdout.strip() == str(sum(range(100000 + i)))

    t = time.perf_counter()
    ok = await asyncio.gather(*(one(i) for i in range(jobs)))
    dt = time.perf_counter() - t
    print(
        f"{backend:>12} throughput: {jobs} compile+run jobs in {dt:.1f} s = {jobs / dt:.2f} jobs/s "
        f"at concurrency {concurrency(backend)} ({sum(ok)}/{jobs} correct)"
    )


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="bwrap,docker", help="comma-separated backends")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--docker-jobs", type=int, default=40)
    ap.add_argument("--launchers", default="c,python", help="launch paths to compare")
    a = ap.parse_args()
    for backend in a.backend.split(","):
        try:
            await overhead(backend, a.reps, a.launchers.split(","))
        except SandboxError as exc:
            print(f"{backend:>12} not measured: {exc}")
            continue
        await throughput(backend, a.docker_jobs if backend == "docker" else a.jobs)


if __name__ == "__main__":
    asyncio.run(main())
