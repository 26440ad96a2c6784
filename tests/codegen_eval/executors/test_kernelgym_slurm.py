"""The kernel-crash gym on the real local cluster: a bug's baseline and developer fix each run
as a Slurm job (build + boot + reproduce on the compute node) with the local bench's verdicts;
a dead cluster is refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_eval.executors.slurm import SlurmOptions
from codegen_eval.kernelgym import bundled_bug
from codegen_eval.kernelgym.distributed import GymOptions, bench_on_slurm

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
async def test_bug_and_fix_run_as_slurm_jobs(slurm_cluster: str, tmp_path: Path) -> None:
    bug = bundled_bug("t0-null-deref")
    lines: list[str] = []  # kernel-gym bench's progress lines (issue 32 item 8: with job ids)
    rows = await bench_on_slurm(
        [bug],
        gym=GymOptions(runs=2, cpus=2),
        slurm=SlurmOptions(workdir=tmp_path),
        progress=lines.append,
    )
    (row,) = rows
    assert row["reproduced"] is True and row["resolved"] is True, row
    assert row["baseline"]["title"] == bug.expected_title
    assert row["patched"]["completed_runs"] == 2 and row["patched"]["crashes"] == []
    base_job, fix_job = row["executor"]["job_id"], row["patched_executor"]["job_id"]
    assert base_job != fix_job and base_job.split("_")[0].isdigit()

    def said(what: str, info: dict) -> str:
        where = f" on {info['node']}" if info.get("node") else ""
        return f"t0-null-deref: {what} (Slurm job {info['job_id']}{where})"

    assert sorted(x.split("] ", 1)[0] for x in lines) == ["[1/2", "[2/2"], lines
    assert {x.split("] ", 1)[1] for x in lines} == {
        said("baseline reproduced", row["executor"]),
        said("developer fix resolved", row["patched_executor"]),
    }, lines
    assert row["executor"]["cpus_granted"] == min(2, os.cpu_count() or 1)


def test_kernel_gym_bench_refuses_a_dead_cluster(slurm_cluster: str, tmp_path: Path) -> None:
    conf = Path(slurm_cluster).read_text().splitlines()
    dead = tmp_path / "slurm.conf"
    dead.write_text(
        "\n".join("SlurmctldPort=6999" if x.startswith("SlurmctldPort=") else x for x in conf)
    )
    cp = subprocess.run(
        [sys.executable, "-m", "codegen_eval.kernelgym.cli", "bench", "--tier", "0",
         "--executor", "slurm"],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT), SLURM_CONF=str(dead)),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert cp.returncode == 2  # an unusable setup: a usage error (docs/cli.md)
    out = " ".join(cp.stderr.split())
    assert "kernel-gym: error: --executor slurm: the Slurm controller does not answer" in out, out
    assert not (tmp_path / "runs").exists()  # nothing was submitted or written


@pytest.mark.slow
async def test_the_gym_judges_an_episode_through_slurm_jobs(
    slurm_cluster: str, tmp_path: Path
) -> None:
    # The kernel agent's seam (`kernel-agent --executor slurm`): reset and step run their
    # build + boot + reproduce as jobs; the episode and its source view stay here.
    from codegen_eval.kernelgym import KernelGym, Outcome
    from codegen_eval.kernelgym.distributed import SlurmStepScorer

    bug = bundled_bug("t0-hung-task")
    judge = SlurmStepScorer(GymOptions(runs=2, cpus=2), SlurmOptions(workdir=tmp_path))
    env = KernelGym([bug], runs=2, step_scorer=judge)
    obs = await env.areset(bug.id)
    assert obs.baseline is not None and obs.baseline.outcome is Outcome.REPRODUCED
    assert obs.title == bug.expected_title and "kgym_hung.c" in obs.files
    fixed = await env.astep(bug.developer_patch)
    assert fixed.outcome is Outcome.RESOLVED, fixed.detail
    # The node's gym also refuses a patch that removes the feature, exactly as here.
    src = (bug.source_dir / "kgym_hung.c").read_text().splitlines()  # type: ignore[operator]
    n = src.index("\tmutex_lock(&kgym_lock);") + 1
    hack = (
        f"--- a/kgym_hung.c\n+++ b/kgym_hung.c\n@@ -{n},1 +{n},2 @@\n"
        "+\treturn -EINVAL;\n \tmutex_lock(&kgym_lock);\n"
    )
    assert (await env.astep(hack)).outcome is Outcome.FUNCTION_BROKEN
    # baseline, fix, hack: three jobs, each its own
    assert len({info["job_id"] for info in judge.jobs}) == 3, judge.jobs


def test_kernel_agent_refuses_a_dead_cluster_in_one_line(
    slurm_cluster: str, tmp_path: Path
) -> None:
    from appl.testing import ScriptedServer

    conf = Path(slurm_cluster).read_text().splitlines()
    dead = tmp_path / "slurm.conf"
    dead.write_text(
        "\n".join("SlurmctldPort=6999" if x.startswith("SlurmctldPort=") else x for x in conf)
    )
    with ScriptedServer(default_reply="ok") as server:
        cp = subprocess.run(
            [sys.executable, "-m", "agents.kernel.cli", "bench", "--bugs", "t0-warn",
             "--model", "scripted", "--base-url", server.base_url, "--executor", "slurm"],
            cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT), SLURM_CONF=str(dead)),
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert cp.returncode == 2, cp.stdout + cp.stderr
    last = cp.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "kernel-agent: error: --executor slurm: the Slurm controller does not answer"
    )
    assert "Traceback" not in cp.stderr
