"""--executor slurm across nodes, on a real three-node cluster simulated on this machine
(scripts/slurm-local.sh up --nodes 3: one network + UTS + mount namespace per node): the same
verdicts as --executor local with the work spread over the nodes and every record naming its
node, MPI ranks of one candidate on two nodes with the confinement each rank keeps, and two
clusters on one machine that do not touch each other."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from codegen_eval.executors.mpi_step import run_mpi_step
from codegen_eval.log import read_log
from sandboxes import ExecStatus, Limits
from tests.codegen_eval.executors.conftest import slurm_local
from tests.codegen_eval.executors.test_slurm_executor import cli, reference_samples, verdicts

NODES = {"node1", "node2", "node3"}

PROBE = r"""
#include <mpi.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, sum = 0, one = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char host[64] = "", name[64];
    gethostname(host, sizeof host);
    snprintf(name, sizeof name, "/dev/shm/rank%d", rank);
    close(open(name, O_WRONLY | O_CREAT, 0644));
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* all files written */
    int shm = 0;
    for (int r = 0; r < sum; ++r) {
        snprintf(name, sizeof name, "/dev/shm/rank%d", r);
        shm += access(name, F_OK) == 0;
    }
    int shadow = open("/etc/shadow", O_RDONLY) < 0 ? errno : 0;
    int usr = open("/usr/probe-written", O_WRONLY | O_CREAT, 0644) < 0 ? errno : 0;
    /* A TEST-NET-3 address: a node has no route out, so connect fails here, sending nothing. */
    struct sockaddr_in out = {.sin_family = AF_INET, .sin_port = htons(9)};
    inet_pton(AF_INET, "203.0.113.1", &out.sin_addr);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int net = connect(s, (struct sockaddr *)&out, sizeof out) < 0 ? errno : 0;
    char cap[64] = "?", line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "CapEff:", 7)) sscanf(line + 7, "%63s", cap);
    printf("rank=%d host=%s sum=%d shm=%d shadow=%d usr=%d net=%d capeff=%s\n", rank, host, sum,
           shm, shadow, usr, net, cap);
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.slow
def test_same_verdicts_local_and_three_nodes(three_nodes: str, tmp_path: Path) -> None:
    """Every built-in Verilog reference, broken variants and hpc-kernels references: the same
    (status, failure class) both ways; the jobs ran on all three nodes; each record names the
    node that scored it."""
    samples = tmp_path / "samples.jsonl"
    total = reference_samples(samples)
    common = ["run", "--suite", "verilog", "--suite", "hpc-kernels", "--samples", str(samples),
              "-n", "3", "--no-progress", "--filter", "*"]  # fmt: skip
    local = cli(*common, "--log", str(tmp_path / "local.jsonl"))
    assert local.returncode == 0, local.stderr
    remote = cli(*common, "--log", str(tmp_path / "slurm.jsonl"), "--executor", "slurm",
                 "--slurm-batch-size", "6")  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    a, b = verdicts(tmp_path / "local.jsonl"), verdicts(tmp_path / "slurm.jsonl")
    assert len(a) == total and a == b
    records = read_log(tmp_path / "slurm.jsonl").score_records
    nodes = [r["executor"]["node"] for r in records]
    assert set(nodes) == NODES, sorted(set(nodes))
    per_job: dict[str, set[str]] = {}
    for r in records:
        per_job.setdefault(r["executor"]["job_id"], set()).add(r["executor"]["node"])
    assert all(len(v) == 1 for v in per_job.values())  # a job runs on one node


def _probe(tmp_path: Path) -> bytes:
    (tmp_path / "probe.c").write_text(PROBE)
    subprocess.run(["mpicc", "-o", str(tmp_path / "probe"), str(tmp_path / "probe.c")],
                   check=True, timeout=120)  # fmt: skip
    return (tmp_path / "probe").read_bytes()


@pytest.mark.slow
def test_ranks_on_two_nodes_keep_their_confinement(three_nodes: str, tmp_path: Path) -> None:
    """srun --mpi=pmix -N2 -n4 through rank_confine.sh: two ranks per node, one MPI job, and
    on each node every rank has no capability, no /etc/shadow, a read-only /usr, no route out
    of the node, and a /dev/shm shared with its node's ranks only."""
    step = asyncio.run(run_mpi_step(_probe(tmp_path), 4, workdir=tmp_path,
                                    srun_args=("--nodes=2",), limits=Limits(wall_s=120)))  # fmt: skip
    assert step.result.status == ExecStatus.OK, step.result.stderr[-2000:]
    assert step.granted is not None and len(step.granted.nodes) == 2
    rows = [
        dict(kv.split("=", 1) for kv in line.split()) for line in step.result.stdout.splitlines()
    ]
    assert sorted(int(r["rank"]) for r in rows) == [0, 1, 2, 3]
    hosts = [r["host"] for r in rows]
    assert set(hosts) <= NODES and len(set(hosts)) == 2 and all(hosts.count(h) == 2 for h in hosts)
    for r in rows:
        assert r["sum"] == "4"  # one communicator across both nodes
        assert r["shm"] == "2", r  # its node's two ranks, not the other node's
        assert int(r["shadow"]) == 2 and int(r["usr"]) == 30  # ENOENT, EROFS
        assert int(r["net"]) == 101, r  # ENETUNREACH: no route out of the node
        assert int(r["capeff"], 16) == 0


@pytest.mark.slow
def test_mpi_candidates_run_as_steps_across_two_nodes(three_nodes: str, tmp_path: Path) -> None:
    """--executor slurm --slurm-mpi-steps on three nodes: each mpi-completion job holds two
    nodes and its np=4 step puts ranks on both; verdicts as with mpirun in the sandbox."""
    args = ["run", "--suite", "mpi-completion", "--solver", "reference", "--limit", "3",
            "--no-progress"]  # fmt: skip
    local = cli(*args, "--log", str(tmp_path / "local.jsonl"))
    assert local.returncode == 0, local.stderr
    remote = cli(*args, "--log", str(tmp_path / "slurm.jsonl"), "--executor", "slurm",
                 "--slurm-mpi-steps")  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    assert verdicts(tmp_path / "local.jsonl") == verdicts(tmp_path / "slurm.jsonl")
    for rec in read_log(tmp_path / "slurm.jsonl").score_records:
        assert rec["status"] == "pass" and rec["executor"]["node"] in NODES
        for np_ in (2, 3, 4):  # every np's step on both nodes of the job
            assert rec["metrics"][f"ranks_granted@np{np_}"] == float(np_)
            assert rec["metrics"][f"nodes_granted@np{np_}"] == 2.0


def _pids_of(state: Path) -> set[int]:
    pids = set()
    for f in [*state.glob("run/*.pid"), state / "munge" / "munged.pid"]:
        if f.exists() and f.read_text().strip().isdigit():
            pids.add(int(f.read_text()))
    return {p for p in pids if Path(f"/proc/{p}").exists()}


def test_two_clusters_on_one_machine_do_not_collide(three_nodes: str, tmp_path: Path) -> None:
    """A second cluster (another name) gets its own state, ports, network and namespaces;
    its `down` stops only what it started and leaves nothing behind; bad options are one
    line."""
    other = ("--name", "cgl-test-other")
    up = slurm_local("up", "--nodes", "2", *other)
    try:
        assert up.returncode == 0, up.stderr
        conf = up.stdout.strip().splitlines()[-1].split("=", 1)[1]
        state = Path(conf).parent
        assert state != Path(three_nodes).parent
        mine, theirs = Path(three_nodes).read_text(), Path(conf).read_text()

        def setting(text: str, key: str) -> str:
            return next(x for x in text.splitlines() if x.startswith(key + "=")).split("=", 1)[1]

        for key in ("SlurmctldPort", "SlurmdPort", "SlurmctldHost", "ClusterName"):
            assert setting(mine, key) != setting(theirs, key), key
        env = dict(os.environ, SLURM_CONF=conf)
        out = subprocess.run(["srun", "-N2", "-n2", "hostname"], env=env, capture_output=True,
                             text=True, timeout=60, check=True).stdout  # fmt: skip
        assert sorted(out.split()) == ["node1", "node2"]
        pids = _pids_of(state)
        assert len(pids) == 4  # munged, slurmctld, two slurmd
        again = slurm_local("up", "--nodes", "3", *other)
        assert again.returncode == 1 and "is up with 2 node(s), not 3" in again.stderr
    finally:
        down = slurm_local("down", *other)
    assert down.returncode == 0, down.stderr
    assert not any(Path(f"/proc/{p}").exists() for p in pids)
    tag = next(x for x in theirs.splitlines() if x.startswith("ClusterName="))[-6:]
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert tag not in links and tag not in netns
    assert slurm_local("status", "--name", "cgl-test-3n").returncode == 0  # the first lives
    bad = slurm_local("up", "--nodes", "0", *other)
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "--nodes: a number from 1 to 64" in bad.stderr


@pytest.mark.slow
def test_pareval_mpi_configs_across_two_nodes(three_nodes: str, tmp_path: Path) -> None:
    """ParEval's MPI model (the fixture checkout, trusted verdict) with --slurm-mpi-steps on
    three nodes: every num_procs of 2 or more runs its ranks on two nodes; references pass."""
    fixture = Path(__file__).parents[1] / "pareval_fixture"
    cp = cli("run", "--pareval", str(fixture), "--pareval-models", "mpi", "--pareval-cores",
             "4", "--solver", "reference", "--log", str(tmp_path / "run.jsonl"),
             "--no-progress", "--executor", "slurm", "--slurm-mpi-steps")  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    records = read_log(tmp_path / "run.jsonl").score_records
    assert records and all(r["status"] == "pass" for r in records), records[:1]
    for r in records:
        spread = {k: v for k, v in r["metrics"].items() if k.startswith("nodes_granted@")}
        assert spread.get("nodes_granted@num_procs=1") == 1.0, spread
        assert spread["nodes_granted@num_procs=2"] == 2.0
        assert spread["nodes_granted@num_procs=4"] == 2.0
