"""An sbatch whose answer we never get, though the controller took the job, on the real local
cluster: the job is found by the tag in its comment and adopted (not submitted twice), and a
job that cannot be found that way and gets submitted again is cancelled as an orphan. Either
way the run ends with every candidate scored once and nothing of it left on the cluster."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codegen_eval.cli import tasks_from_options
from codegen_eval.executors import slurm_client
from codegen_eval.executors.slurm import SlurmExecutor, SlurmOptions
from codegen_eval.log import read_log
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import ReferenceSolver

# The first sbatch of the run goes through to the controller, then the client never hears:
# "slow" hangs past the submit timeout; "lost" fails and, having dropped --comment, leaves a
# job nobody can recognise, held in the queue (as on a busy cluster) until someone acts.
WRAPPER = """\
    #!{python}
    import os, subprocess, sys, time
    args = sys.argv[1:]
    first = not os.path.exists({mark!r})
    if first:
        open({mark!r}, "w").close()
        if {mode!r} == "lost":
            args = ["--hold", *(a for a in args if not a.startswith("--comment="))]
    p = subprocess.run([{real!r}, *args])
    if first:
        if {mode!r} == "slow":
            time.sleep(8)
        sys.exit(1)
    sys.exit(p.returncode)
"""


def _bases(job_name: str) -> dict[str, set[str]]:
    out = subprocess.run(["squeue", "-h", "-t", "all", "--name", job_name, "-o", "%F|%T"],
                         capture_output=True, text=True, timeout=20, check=True).stdout  # fmt: skip
    states: dict[str, set[str]] = {}
    for line in out.split():
        base, state = line.split("|")
        states.setdefault(base, set()).add(state)
    return states


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["slow", "lost"])
async def test_an_unanswered_sbatch_is_adopted_or_its_job_cancelled(
    slurm_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    real = shutil.which("sbatch")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "sbatch"
    wrapper.write_text(textwrap.dedent(WRAPPER).format(
        python=sys.executable, mark=str(tmp_path / "first"), mode=mode, real=real))  # fmt: skip
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(real).parent}:/usr/bin:/bin")
    monkeypatch.setattr(slurm_client, "SUBMIT_TIMEOUT_S", 3.0)

    options = {"suite": ["verilog"]}
    spec = {"factory": "codegen_eval.cli:tasks_from_options",
            "kwargs": {"options": options, "plugins": []}}  # fmt: skip
    opts = SlurmOptions(batch_size=5, workdir=tmp_path / "w", poll_interval_s=0.2)
    ex = SlurmExecutor(opts, spec)
    log = tmp_path / "run.jsonl"
    result = await run_eval(
        tasks_from_options(options, []),
        ReferenceSolver(),
        log,
        RunConfig(progress=False, executor=ex, limit=10),
    )
    contents = read_log(log)
    assert result.scored_now == 10 and contents.duplicates == 0
    assert all(r["status"] == "pass" for r in contents.score_records)
    jobs = _bases(ex.job_name)
    stats = ex.stats()
    if mode == "slow":  # adopted: one array, submitted once
        assert len(jobs) == 1 and stats["orphans_cancelled"] == 0, (jobs, stats)
    else:  # submitted twice, the unrecognised one cancelled
        assert len(jobs) == 2 and stats["orphans_cancelled"] == 1, (jobs, stats)
        used = {r["executor"]["job_id"].split("_")[0] for r in contents.score_records}
        (orphan,) = set(jobs) - used
        assert jobs[orphan] == {"CANCELLED"}, jobs
    # nothing waits in the queue (finished elements may still be COMPLETING)
    assert all("PENDING" not in states for states in jobs.values()), jobs
