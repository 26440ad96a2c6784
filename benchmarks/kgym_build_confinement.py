"""What confining the gym's module builds costs: the same module built on the host (the old
path, `ModuleBuilder._build_on_host`) and in the bubblewrap sandbox (`_build_confined`),
interleaved, no cache, so both see the same load.

    .venv/bin/python benchmarks/kgym_build_confinement.py [--bug t0-null-deref] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from codegen_eval.kernelgym.builders import BuildStatus, ModuleBuilder, debian_kernel
from codegen_eval.kernelgym.records import bundled_bug


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bug", default="t0-null-deref")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    bug = bundled_bug(args.bug)
    assert bug.source_dir is not None
    dk = debian_kernel()
    builder = ModuleBuilder(dk.headers, key=dk.release)
    sources = {
        str(p.relative_to(bug.source_dir)): p.read_bytes()
        for p in sorted(bug.source_dir.rglob("*"))
        if p.is_file()
    }
    times: dict[str, list[float]] = {"host": [], "sandbox": []}
    for _ in range(args.repeat):
        for name in ("host", "sandbox"):
            t0 = time.perf_counter()
            if name == "host":
                status, log, _ = builder._build_on_host(sources, bug.developer_patch)
            else:
                status, log, _ = asyncio.run(builder._build_confined(sources, bug.developer_patch))
            times[name].append(time.perf_counter() - t0)
            assert status is BuildStatus.OK, log[-2000:]
    with open("/proc/loadavg") as fh:
        load = fh.read().split()[0]
    host, sandbox = statistics.median(times["host"]), statistics.median(times["sandbox"])
    print(f"{args.bug}: patch + module build, median of {args.repeat}, load {load}")
    print(f"  host (unconfined)  {host:6.2f} s")
    print(f"  sandbox (bwrap)    {sandbox:6.2f} s   ratio {sandbox / host:.2f}x")


if __name__ == "__main__":
    main()
