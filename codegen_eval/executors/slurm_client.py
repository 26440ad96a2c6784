"""The few Slurm commands the slurm executor needs, each a subprocess under a timeout.

No client library: `sbatch --parsable` to submit, `squeue -t all -r` to watch (it also lists
jobs that ended within the controller's MinJobAge, default 300 s, so no accounting database is
needed), `scancel` to stop, `scontrol ping` and `sbatch --test-only` to check the cluster
before any work. Every call has a timeout because with the controller down the clients block
10 s or more (measured with Slurm 22.05).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from codegen_eval.errors import CodegenEvalError

__all__ = [
    "FAILED_STATES",
    "JobState",
    "SlurmError",
    "SlurmUnavailable",
    "cancel",
    "check_cluster",
    "partition_cpus",
    "partition_nodes",
    "query",
    "submit",
]

# Terminal states in which the job did not run its batch to the end. Its missing results are
# the cluster's fault, never the candidate's.
FAILED_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "TIMEOUT",
    }
)
TERMINAL_STATES = FAILED_STATES | {"COMPLETED"}
CALL_TIMEOUT_S = 20.0
SUBMIT_TIMEOUT_S = CALL_TIMEOUT_S


class SlurmError(CodegenEvalError, RuntimeError):
    """A Slurm command failed or did not answer in time."""


class SlurmUnavailable(SlurmError):
    """The cluster cannot take work (no client, controller down, options it refuses)."""


@dataclass(frozen=True, slots=True)
class JobState:
    job_id: str  # "123_4" for an array element
    state: str  # PENDING, RUNNING, COMPLETED, CANCELLED, ...
    reason: str  # squeue's reason (None, Priority, NodeFail...)
    node: str

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]


async def _call(argv: Sequence[str], timeout_s: float = CALL_TIMEOUT_S) -> str:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise SlurmError(f"{argv[0]}: {exc}") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise SlurmError(f"{argv[0]} did not answer within {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        raise SlurmError(f"{argv[0]} failed: {_one_line(err.decode(errors='replace'))}")
    return out.decode(errors="replace")


def _call_sync(argv: Sequence[str], timeout_s: float = CALL_TIMEOUT_S) -> str:
    try:
        p = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(
            f"`{' '.join(argv[:2])}` did not answer within {timeout_s:.0f} s"
        ) from None
    except OSError as exc:
        raise SlurmUnavailable(f"{argv[0]}: {exc}") from None
    if p.returncode != 0:
        raise SlurmUnavailable(f"`{' '.join(argv[:2])}` failed: {_one_line(p.stderr or p.stdout)}")
    return p.stdout


def check_cluster(sbatch_options: Sequence[str], timeout_s: float = 15.0) -> str:
    """Before any work: the clients exist, the controller answers, and it would accept a job
    with these options (`sbatch --test-only`: partition, account, time and memory are checked
    by the controller itself). Returns the controller's line; raises SlurmUnavailable."""
    conf = os.environ.get("SLURM_CONF", "the default slurm.conf")
    if "SLURM_CONF" in os.environ and not os.path.isfile(os.environ["SLURM_CONF"]):
        # said at once: the clients would wait for a controller they cannot find (15 s)
        raise SlurmUnavailable(
            f"SLURM_CONF={os.environ['SLURM_CONF']} is not a file: point it at the cluster's "
            "slurm.conf (scripts/slurm-local.sh up prints it for the local cluster)"
        )
    for tool in ("sbatch", "squeue", "scancel", "scontrol"):
        if shutil.which(tool) is None:
            raise SlurmUnavailable(
                f"{tool} is not on PATH: install Slurm's clients (Debian: slurm-client) or "
                "use --executor local"
            )
    try:
        ping = _call_sync(["scontrol", "ping"], timeout_s)
    except SlurmUnavailable as exc:
        raise SlurmUnavailable(f"the Slurm controller does not answer ({conf}): {exc}") from None
    if "UP" not in ping:
        raise SlurmUnavailable(f"the Slurm controller is not up ({conf}): {_one_line(ping)}")
    try:
        _call_sync(["sbatch", "--test-only", *sbatch_options, "--wrap", "true"], timeout_s)
    except SlurmUnavailable as exc:
        raise SlurmUnavailable(f"the cluster refuses these job options: {exc}") from None
    return _one_line(ping)


def partition_nodes(partition: str | None, timeout_s: float = 15.0) -> dict[str, int]:
    """The partition's nodes and their CPUs ({} when sinfo does not say)."""
    where = [f"--partition={partition}"] if partition else []
    try:
        out = _call_sync(["sinfo", "-h", "-N", "-o", "%N %c", *where], timeout_s)
    except SlurmUnavailable:
        return {}
    per_node: dict[str, int] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].rstrip("+").isdigit():
            per_node[parts[0]] = int(parts[1].rstrip("+"))
    return per_node


def partition_cpus(partition: str | None, timeout_s: float = 15.0) -> tuple[int, int]:
    """(CPUs of the partition's largest node: what one job can be granted at most, CPUs of
    the whole partition); (1, 1) when sinfo does not say."""
    per_node = partition_nodes(partition, timeout_s)
    if not per_node:
        return 1, 1
    return max(per_node.values()), sum(per_node.values())


async def submit(
    argv_options: Sequence[str], script_and_args: Sequence[str], *, job_name: str, tag: str
) -> str:
    """sbatch; returns the job id (an array's base id). `tag` (unique per submission) goes in
    the job's comment: an sbatch that timed out on our side may still have been accepted, and
    then the job it made is found by its tag and adopted rather than submitted a second time."""
    try:
        out = await _call(["sbatch", "--parsable", f"--comment={tag}", *argv_options,
                           *script_and_args], SUBMIT_TIMEOUT_S)  # fmt: skip
    except SlurmError:
        if found := await _tagged(job_name, tag):
            return found
        raise
    job_id = out.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(f"sbatch answered {out.strip()!r}, not a job id")
    return job_id


async def _tagged(job_name: str, tag: str) -> str | None:
    """The base id of the job named `job_name` whose comment is `tag`, if the controller has
    one (None also when it cannot be asked)."""
    try:
        out = await _call(["squeue", "-h", "-t", "all", "--name", job_name, "-o", "%F|%k"])
    except SlurmError:
        return None
    for line in out.splitlines():
        base, _, comment = line.strip().partition("|")
        if comment == tag and base.isdigit():
            return base
    return None


async def query(job_name: str) -> dict[str, JobState]:
    """States of the jobs named `job_name` (one name per run; array elements one per line,
    ended jobs included while the controller remembers them). Filtering by name, not by id:
    `squeue -j` fails as a whole when one id has been forgotten."""
    out = await _call(["squeue", "-h", "-r", "-t", "all", "--name", job_name, "-o", "%i|%T|%r|%N"])
    states: dict[str, JobState] = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4:
            states[parts[0]] = JobState(parts[0], parts[1], parts[2], parts[3])
    return states


async def cancel(job_ids: Sequence[str]) -> None:
    if job_ids:
        await _call(["scancel", *job_ids], 10.0)
