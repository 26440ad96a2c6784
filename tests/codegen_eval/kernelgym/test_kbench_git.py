"""A kBench-format record scored end to end on a real Linux git checkout.

This machine has no Linux git clone and no network, so the fixture makes one: a copy of
Debian's linux-source-6.1 (the tree tier 1 unpacks) committed into a git repository, with the
tier-1 groups use-after-free committed on top as a second commit, the "parent of the fix".
The record names that commit, carries the resolved tier-1 KASAN config and the C reproducer as
text, and the developer fix as its patch. Everything lives in the gym's cache and is made
once; fixed author and dates make the commit hashes the same on every machine.

Cold (no cache): copy + commit ~1-2 min, a full KASAN kernel build in a fresh worktree
(minutes on 2 cores), then incremental builds of seconds. Warm: the unpatched and fixed
kernels come from the artifact cache; only the build-breaking patch is compiled again.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codegen_eval.kernelgym import KernelGym, Outcome, PatchScorer, ReproConfig, load_record
from codegen_eval.kernelgym.builders import KernelTree, _ensure_source, cache_root, file_lock
from codegen_eval.kernelgym.cli import main as cli_main
from codegen_eval.kernelgym.records import bundled_bug
from codegen_eval.kernelgym.scoring import CONFIG_DIR

pytestmark = pytest.mark.slow

NAME = "linux-6.1-kgym"  # the repository's directory name (worktrees are named after it)
BUG = "t1-tree-groups-uaf"  # the tier-1 bug committed into the fixture repository
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "kgym",
    "GIT_AUTHOR_EMAIL": "kgym@example.invalid",
    "GIT_AUTHOR_DATE": "2023-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "kgym",
    "GIT_COMMITTER_EMAIL": "kgym@example.invalid",
    "GIT_COMMITTER_DATE": "2023-01-01T00:00:00+0000",
    "GIT_CONFIG_GLOBAL": "/dev/null",  # no user hooks, signing or autocrlf
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True, slots=True)
class Fixture:
    repo: Path
    record: Path  # kBench JSON of the injected bug
    base_commit: str
    bug_commit: str


def _sh(cmd: list[str], cwd: Path, stdin: str | None = None) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, env=GIT_ENV, input=stdin, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"{cmd}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout.strip()


def _resolved_config(repo: Path, scratch: Path) -> str:
    """tinyconfig + the tier-1 fragment + olddefconfig, as tier 1 configures its tree: a full
    .config, like the ones syzbot records carry (a bare fragment would mean a defconfig-sized
    kernel, far too slow to build here)."""
    fragment = CONFIG_DIR / "kasan-6.1.config"
    out = f"O={scratch}"
    _sh(["make", out, "tinyconfig"], repo)
    merge = ["scripts/kconfig/merge_config.sh", "-m", "-O", str(scratch)]
    _sh([*merge, str(scratch / ".config"), str(fragment)], repo)
    _sh(["make", out, "olddefconfig"], repo)
    return (scratch / ".config").read_text()


def _record(repo: Path, commit: str, config: str) -> dict[str, Any]:
    bug = bundled_bug(BUG)
    title = bug.expected_title
    gcc = _sh(["gcc", "--version"], repo).splitlines()[0]
    return {
        "version": 1,
        "title": title,
        "display-title": title,
        "id": "kgym-git-groups-uaf",
        "status": "fixed",
        "fix-commits": [
            {"title": "groups: put the group info after installing it", "link": "", "hash": ""}
        ],
        "discussions": [],
        "crashes": [
            {
                "title": title,
                "syz-reproducer": "",
                "c-reproducer": bug.c_reproducer,
                "kernel-config": config,
                "kernel-source-git": str(repo),
                "kernel-source-commit": commit,
                "syzkaller-git": "",
                "syzkaller-commit": "",
                "compiler-description": gcc,
                "architecture": "amd64",
                "crash-report-link": "",
            }
        ],
        "subsystems": ["kernel"],
        "parent_of_fix_commit": commit,
        "patch": bug.developer_patch,
        "patch_modified_files": bug.modified_files,
    }


def kbench_fixture() -> Fixture:
    """The git repository and the record, made once under the gym's cache."""
    root = cache_root() / "fixtures"
    repo, record = root / NAME, root / f"{NAME}-groups-uaf.json"
    with file_lock(root / f"{NAME}.lock"):
        if not record.exists():
            tree = KernelTree(CONFIG_DIR / "kasan-6.1.config")
            _ensure_source(tree.tarball, tree.source)
            tmp = root / f"tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(repo, ignore_errors=True)
            # Under the tier-1 tree's lock: no tier-1 patch is half applied while we copy.
            with file_lock(tree.build_dir.parent / f"{tree.build_dir.name}.lock"):
                _sh(["cp", "-a", str(tree.source), str(tmp)], root)
            _sh(["git", "init", "-q"], tmp)
            # No automatic gc: a repack of 70k objects in the background slows the build.
            _sh(["git", "config", "gc.auto", "0"], tmp)
            # -f: the tarball's files, all of them, even those Linux's .gitignore names.
            _sh(["git", "-c", "core.looseCompression=1", "add", "-A", "-f"], tmp)
            _sh(["git", "commit", "-q", "-m", "Debian linux-source-6.1"], tmp)
            base = _sh(["git", "rev-parse", "HEAD"], tmp)
            scratch = root / f"tmp-config-{os.getpid()}"
            config = _resolved_config(tmp, scratch)
            shutil.rmtree(scratch)
            inject = (bundled_bug(BUG).base_dir / "inject.patch").read_text()  # type: ignore[operator]
            _sh(["patch", "-p1", "--batch", "--no-backup-if-mismatch"], tmp, stdin=inject)
            _sh(["git", "commit", "-q", "-a", "-m", "groups: put the group info too early"], tmp)
            bug_commit = _sh(["git", "rev-parse", "HEAD"], tmp)
            tmp.rename(repo)
            data = _record(repo, bug_commit, config)
            data["kgym-fixture-base"] = base  # an unknown key: records keep it, nobody reads it
            record.write_text(json.dumps(data, indent=1))
    data = json.loads(record.read_text())
    return Fixture(repo, record, data["kgym-fixture-base"], data["parent_of_fix_commit"])


def _git_status(path: Path) -> str:
    return _sh(["git", "status", "--porcelain", "--untracked-files=all"], path)


@pytest.mark.timeout(1800)
async def test_kbench_record_on_a_linux_git_checkout(capsys: pytest.CaptureFixture[str]) -> None:
    times: dict[str, float] = {}
    t0 = time.monotonic()
    fx = kbench_fixture()
    times["fixture"] = time.monotonic() - t0
    bug = load_record(fx.record)
    assert bug.kind == "kbench" and bug.kernel_commit == fx.bug_commit
    scorer = PatchScorer(ReproConfig(runs=2, accel="auto"), linux_tree=fx.repo)

    base = await scorer.score(bug, "")
    times["unpatched build"], times["unpatched run"] = base.build_s, base.run_s
    assert base.outcome is Outcome.REPRODUCED, base.detail + base.console_excerpt[-3000:]
    assert base.title == bug.expected_title == "KASAN: use-after-free Write in set_groups"

    fixed = await scorer.score(bug, bug.developer_patch)
    times["fix build"], times["fix run"] = fixed.build_s, fixed.run_s
    assert fixed.outcome is Outcome.RESOLVED, fixed.detail + fixed.console_excerpt[-3000:]
    # Plausible and the developer's fix: its function read from the commit (git show).
    assert fixed.plausible and fixed.matches_fix is True and fixed.localization is not None
    assert fixed.localization["method"] == "source"
    assert fixed.localization["functions"]["fix"] == ["kernel/groups.c:sys_setgroups"]

    garbage = (
        "--- a/kernel/groups.c\n+++ b/kernel/groups.c\n@@ -1,3 +1,3 @@\n"
        "-this line is not there\n+neither is this one\n"
    )
    bad = await scorer.score(bug, garbage)
    assert bad.outcome is Outcome.APPLY_FAILED, bad.detail
    assert "FAILED" in bad.detail or "hunk" in bad.detail.lower()

    typo = bug.developer_patch.replace(
        "+\tput_group_info(group_info);", "+\tput_group_info(group_infoo);"
    )
    assert typo != bug.developer_patch
    t1 = time.monotonic()
    broken = await scorer.score(bug, typo)
    times["broken build"] = time.monotonic() - t1
    assert broken.outcome is Outcome.BUILD_FAILED, broken.detail
    assert "group_infoo" in broken.detail and "error" in broken.detail

    # Every candidate was undone: the worktree is the bug's commit, the user's repo untouched.
    wt = scorer.git.worktree(fx.bug_commit)
    assert _git_status(wt) == ""
    assert _sh(["git", "rev-parse", "HEAD"], wt) == fx.bug_commit
    assert _git_status(fx.repo) == ""

    # The command line (the unpatched kernel now comes from the cache: one boot).
    t1 = time.monotonic()
    argv = ["--runs", "1", "--linux-tree", str(fx.repo), "--bugs", str(fx.record)]
    # (in a thread: the CLI runs its own event loop)
    assert await asyncio.to_thread(cli_main, [*argv, "reproduce", bug.id]) == 0
    times["cli reproduce (cached)"] = time.monotonic() - t1
    assert "KASAN: use-after-free Write in set_groups" in capsys.readouterr().out

    # The agent API: the source view is the worktree at the buggy commit.
    env = KernelGym(bugs=[bug], runs=1, linux_tree=fx.repo)
    obs = await env.areset(bug.id)
    assert obs.title == bug.expected_title
    assert obs.baseline is not None and obs.baseline.matches_expected
    groups = obs.source.read_file("kernel/groups.c")
    assert "put_group_info(group_info);\n\tretval = set_current_groups" in groups
    res = await env.astep(bug.developer_patch)
    assert res.outcome is Outcome.RESOLVED and env.solved
    env.close()

    with capsys.disabled():
        print("\nkbench git timings (s):", {k: round(v, 1) for k, v in times.items()})
