"""What confining the gym's module builds costs: the same module built on the host (the old
path, `ModuleBuilder._build_on_host`) and in the bubblewrap sandbox (`_build_confined`),
interleaved, no cache, so both see the same load. Then, where a tier-1 kernel tree is built
(`--tree`), what a candidate's scratch copy of its build directory costs
(`candidate_build_dir`), next to one incremental candidate build of that tree; and what a
candidate's private copy of the source tree costs (`candidate_source`: hard links, the
patch applied in the sandbox, `seal_source`), which needs only the source unpacked.

    .venv/bin/python benchmarks/kgym_build_confinement.py [--bug t0-null-deref] [--repeat 5]
        [--tree t1-tree-groups-uaf] [--source-only]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from codegen_eval.kernelgym.builders import (
    BuildStatus,
    ModuleBuilder,
    _ensure_source,
    debian_kernel,
)
from codegen_eval.kernelgym.buildrun import (
    apply_confined,
    candidate_build_dir,
    candidate_source,
    seal_source,
)
from codegen_eval.kernelgym.records import bundled_bug
from codegen_eval.kernelgym.scoring import PatchScorer


def tree_copy(bug_id: str, repeat: int) -> None:
    """The scratch copy per candidate, against one candidate build (uncached) of the tree."""
    bug = bundled_bug(bug_id)
    scorer = PatchScorer()
    tree = scorer.tree
    if not tree.is_built():
        print(f"{bug_id}: the tree is not built yet (run its tier-1 test first); skipped")
        return
    size = sum(p.stat().st_size for p in tree.build_dir.rglob("*") if p.is_file())
    copies = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        with candidate_build_dir(tree.source, tree.build_dir):
            copies.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    res = tree.build_patched([scorer._inject_patch(bug), bug.developer_patch], use_cache=False)
    build = time.perf_counter() - t0
    assert res.ok, res.log[-2000:]
    copy = statistics.median(copies)
    print(f"{bug_id}: build directory {size / 1e6:.0f} MB")
    print(f"  scratch copy       {copy:6.2f} s   (median of {repeat})")
    print(f"  candidate build    {build:6.2f} s   (copy included; copy share {copy / build:.0%})")


def source_copy(bug_id: str, repeat: int) -> None:
    """A candidate's private source tree: copy, apply the bug's patches in the sandbox,
    seal; removal happens in the background (not timed: it is off the candidate's path)."""
    bug = bundled_bug(bug_id)
    scorer = PatchScorer()
    tree = scorer.tree
    _ensure_source(tree.tarball, tree.source)
    entries = sum(1 for _ in tree.source.rglob("*"))
    patches = [scorer._inject_patch(bug), bug.developer_patch]
    steps: dict[str, list[float]] = {"copy": [], "apply": [], "seal": []}
    for _ in range(repeat):
        t0 = time.perf_counter()
        with candidate_source(tree.source, tree.build_dir) as src:
            t1 = time.perf_counter()
            ok, log = apply_confined(src, patches, at=tree.source.resolve())
            assert ok, log
            t2 = time.perf_counter()
            changed = seal_source(src, tree.source)
            t3 = time.perf_counter()
        steps["copy"].append(t1 - t0)
        steps["apply"].append(t2 - t1)
        steps["seal"].append(t3 - t2)
    with open("/proc/loadavg") as fh:
        load = fh.read().split()[0]
    print(f"{bug_id}: private source copy of {entries} entries, median of {repeat}, load {load}")
    for name, values in steps.items():
        print(
            f"  {name:<6} {statistics.median(values):6.2f} s  (min {min(values):.2f}, max {max(values):.2f})"
        )
    total = sum(statistics.median(v) for v in steps.values())
    print(f"  total  {total:6.2f} s per candidate; changed: {', '.join(changed)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bug", default="t0-null-deref")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tree", default="t1-tree-groups-uaf", help="a tier-1 tree bug, or ''")
    ap.add_argument("--source-only", action="store_true", help="only the source copy figures")
    args = ap.parse_args()
    if args.tree:
        source_copy(args.tree, args.repeat)
    if args.source_only:
        return
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
    if args.tree:
        tree_copy(args.tree, args.repeat)


if __name__ == "__main__":
    main()
