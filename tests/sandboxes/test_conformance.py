# ruff: noqa: ASYNC220, ASYNC240  (tests inspect host state synchronously, on purpose)
"""Conformance: hostile programs every backend must contain, and good programs every backend
must run. Parametrized over backends; docker asserts its clear no-engine error here."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

from sandboxes import ExecStatus, Limits, Sandbox, toolchains

from .conftest import WALL_FAR_S, marker, processes_with

FORK_BOMB = "#include <unistd.h>\nint main(void){ for(;;) fork(); }\n"
MEM_BOMB = r"""#include <stdlib.h>
#include <string.h>
int main(void){ for(;;){ char *p = malloc(1<<20); if(!p) return 3; memset(p, 1, 1<<20);} }
"""
SPIN = "int main(void){ volatile unsigned long i = 0; for(;;) i++; }\n"
CONNECT = r"""#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void){
  struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(80);
  inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) { perror("socket"); return 3; }
  if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) { perror("connect"); return 3; }
  puts("CONNECTED"); return 0;
}
"""
TIOCSTI_C = r"""#include <errno.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <fcntl.h>
int main(void){
  char c = 'x';
  int fds[3] = {0, 1, 2};
  int fd = open("/dev/tty", O_RDWR);
  for (int i = 0; i < 3; i++) {
    errno = 0;
    int r = ioctl(fd >= 0 ? fd : fds[i], TIOCSTI, &c);
    printf("r=%d errno=%d\n", r, errno);
  }
  return 0;
}
"""


async def build(sb: Sandbox, src: str, name: str = "prog") -> str:
    b = await toolchains.get("c").compile(sb, {f"{name}.c": src}, output=name)
    assert b.ok, b.exec_result.stderr
    assert b.artifact == name
    return b.artifact


# -- resource limits: every backend ----------------------------------------------------------
async def test_fork_bomb_hits_pids_limit(any_sb: Sandbox) -> None:
    exe = await build(any_sb, FORK_BOMB)
    r = await any_sb.exec([f"./{exe}"], limits=Limits(wall_s=3, pids=32))
    assert r.status is ExecStatus.PIDS_LIMIT, r
    assert r.limits_enforced["pids"] is True


async def test_memory_bomb_hits_memory_limit(any_sb: Sandbox) -> None:
    exe = await build(any_sb, MEM_BOMB)
    r = await any_sb.exec([f"./{exe}"], limits=Limits(wall_s=10, memory_mb=64))
    assert r.status is ExecStatus.MEMORY_LIMIT, r
    assert r.limits_enforced["memory"] is True
    assert r.peak_memory_mb is not None and 32 <= r.peak_memory_mb <= 80


async def test_infinite_loop_is_stopped(any_sb: Sandbox) -> None:
    exe = await build(any_sb, SPIN)
    r = await any_sb.exec([f"./{exe}"], limits=Limits(wall_s=2, cpu_s=1))
    assert r.status in (ExecStatus.CPU_LIMIT, ExecStatus.WALL_TIMEOUT), r
    r = await any_sb.exec(["sleep", "600"], limits=Limits(wall_s=1))
    assert r.status is ExecStatus.WALL_TIMEOUT
    # killed at its limit, not left to sleep on: a real kill, so a real clock, and a bound far
    # from both ends (1 s limit, 600 s sleep) that a loaded machine (load 25) cannot cross
    assert r.wall_s < WALL_FAR_S / 2


async def test_huge_file_hits_file_size_limit(any_sb: Sandbox) -> None:
    cap = 1 << 20
    r = await any_sb.exec(
        ["sh", "-c", "head -c 2147483648 /dev/zero > big.bin"],
        limits=Limits(wall_s=20, file_bytes=cap),
    )
    assert r.status is ExecStatus.FILE_SIZE_LIMIT, r
    assert any_sb.run_dir is not None
    assert (any_sb.run_dir / "big.bin").stat().st_size <= cap


async def test_stdout_flood_is_cut_while_reading(any_sb: Sandbox) -> None:
    cap = 1 << 20
    r = await any_sb.exec(
        ["head", "-c", str(100 << 20), "/dev/zero"], limits=Limits(wall_s=20, output_bytes=cap)
    )
    assert r.status is ExecStatus.OUTPUT_LIMIT
    assert r.truncated and len(r.stdout) == cap
    r = await any_sb.exec(["yes"], limits=Limits(wall_s=WALL_FAR_S, output_bytes=4096))
    assert r.status is ExecStatus.OUTPUT_LIMIT and len(r.stdout) == 4096
    assert r.wall_s < WALL_FAR_S / 2  # killed at the cap, well before the wall limit


FILL_PIPE_AND_EXIT = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
int main(void){
  static char buf[1 << 16];
  memset(buf, 'x', sizeof buf);
  for (int fd = 1; fd <= 2; fd++) {
    int size = fcntl(fd, F_SETPIPE_SZ, 1 << 20);  /* an unprivileged process may: 1 MiB */
    for (long left = size > 0 ? size : 1 << 16; left > 0; left -= sizeof buf)
      if (write(fd, buf, sizeof buf) < 0) return 3;
  }
  return 0;  /* exits with its output still in the pipes */
}
"""


async def test_output_left_in_a_full_pipe_does_not_hang_the_harness(
    any_sb: Sandbox,
) -> None:
    """A payload fills an enlarged pipe past the cap and exits before the harness has read it.
    The harness stops keeping output at the cap; had it stopped reading too, asyncio's flow
    control would pause the pipe short of EOF, and (3.11) `Process.wait()` waits for EOF:
    the exec hung for good, the wall limit long past."""
    prog = await build(any_sb, FILL_PIPE_AND_EXIT, "fill")
    r = await asyncio.wait_for(
        any_sb.exec([f"./{prog}"], limits=Limits(wall_s=5, output_bytes=4096)), timeout=60
    )
    assert r.status is ExecStatus.OUTPUT_LIMIT, r
    assert len(r.stdout) == 4096 and r.truncated
    assert r.wall_s < 30


async def test_setsid_child_does_not_outlive_the_run(any_sb: Sandbox) -> None:
    tok = marker()
    script = (
        f"setsid sh -c 'sleep {tok}' </dev/null >/dev/null 2>&1 & "
        f"(nohup sleep {tok} </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo started"
    )
    r = await any_sb.exec(["sh", "-c", script], limits=Limits(wall_s=10))
    assert r.status is ExecStatus.OK and "started" in r.stdout
    await asyncio.sleep(0.2)
    assert processes_with(tok) == []


async def test_testbench_without_finish_times_out(any_sb: Sandbox) -> None:
    tb = 'module tb; reg clk = 0; always #1 clk = ~clk; initial $display("running"); endmodule\n'
    rec = toolchains.get("verilog-iverilog")
    b = await rec.compile(any_sb, {"tb.v": tb}, output="tb")
    assert b.ok, b.exec_result.stderr
    r = await rec.run(any_sb, b.artifact, limits=Limits(wall_s=2))
    assert r.status is ExecStatus.WALL_TIMEOUT


# -- isolation: bwrap and docker -------------------------------------------------------------
async def test_no_network(iso_sb: Sandbox) -> None:
    exe = await build(iso_sb, CONNECT)
    r = await iso_sb.exec([f"./{exe}"], limits=Limits(wall_s=10))
    assert r.status is ExecStatus.NONZERO_EXIT and r.exit_code == 3, r
    assert "CONNECTED" not in r.stdout
    assert r.limits_enforced["network_isolated"] is True


async def test_cannot_read_shadow_or_write_system(iso_sb: Sandbox) -> None:
    r = await iso_sb.exec(["cat", "/etc/shadow"])
    assert r.status is ExecStatus.NONZERO_EXIT and "root:" not in r.stdout
    name = f"pwned-{marker()}"
    for target in (f"/usr/{name}", f"/etc/{name}", f"/{name}", "/usr/bin/gcc"):
        r = await iso_sb.exec(["sh", "-c", f"echo x >> {target}"])
        assert r.status is ExecStatus.NONZERO_EXIT, (target, r)
    r = await iso_sb.exec(["sh", "-c", f"echo x > /tmp/{name}"])
    assert r.ok
    assert not Path(f"/usr/{name}").exists() and not Path(f"/etc/{name}").exists()
    assert not Path(f"/tmp/{name}").exists()  # the sandbox's /tmp is private


async def test_payload_is_not_root_and_sees_no_home_or_repo(iso_sb: Sandbox) -> None:
    r = await iso_sb.exec(["id", "-u"])
    assert r.ok and r.stdout.strip() != "0"
    repo = Path(__file__).resolve().parents[2]
    r = await iso_sb.exec(["sh", "-c", f"ls /root; ls {Path.home()}; cat {repo}/pyproject.toml"])
    assert r.status is ExecStatus.NONZERO_EXIT
    assert "codegen-lab" not in r.stdout
    r = await iso_sb.exec(["sh", "-c", "grep -E '^Cap(Eff|Prm)' /proc/self/status"])
    assert r.ok and all(line.split()[1] == "0000000000000000" for line in r.stdout.splitlines())


async def test_kill_all_leaves_host_processes_alive(iso_sb: Sandbox) -> None:
    uid = int(os.environ.get("CODEGEN_SANDBOX_UID", "65534"))
    root_sentinel = subprocess.Popen(["sleep", "300"])
    # Same uid as the payload: only the pid namespace protects this one.
    same_uid = subprocess.Popen(["sleep", "300"], user=uid if os.geteuid() == 0 else None)
    try:
        r = await iso_sb.exec(["sh", "-c", "kill -9 -1; sleep 0.2; echo survived"])
        assert r.status in (ExecStatus.OK, ExecStatus.SIGNAL, ExecStatus.NONZERO_EXIT)
        await asyncio.sleep(0.2)
        assert root_sentinel.poll() is None
        assert same_uid.poll() is None
    finally:
        for p in (root_sentinel, same_uid):
            p.send_signal(signal.SIGKILL)
            p.wait()


async def test_tiocsti_is_blocked(iso_sb: Sandbox) -> None:
    exe = await build(iso_sb, TIOCSTI_C)
    r = await iso_sb.exec([f"./{exe}"])
    assert r.ok, r
    lines = r.stdout.splitlines()
    assert len(lines) == 3
    assert all(line.startswith("r=-1 ") for line in lines)
    if iso_sb.backend == "bwrap":  # our seccomp filter answers EPERM before any tty check
        assert all(line == "r=-1 errno=1" for line in lines), lines
        assert r.limits_enforced["seccomp"] is True


# -- good programs: every backend ------------------------------------------------------------
OMP = r"""#include <omp.h>
#include <stdio.h>
int main(void){ int n = 0;
#pragma omp parallel
  {
#pragma omp atomic
    n++;
  }
  printf("threads=%d\n", n); return 0; }
"""
MPI = r"""#include <mpi.h>
#include <stdio.h>
int main(int c, char **v){ MPI_Init(&c, &v); int r, s, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &s);
  MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (r == 0) printf("size=%d sum=%d\n", s, sum); MPI_Finalize(); return 0; }
"""
CUDA = r"""#include <cstdio>
__global__ void fill(int *x) { x[threadIdx.x] = threadIdx.x; }
int main() { int *d; cudaMalloc(&d, 64); fill<<<1, 16>>>(d); cudaDeviceSynchronize(); puts("ok"); }
"""
TB_PASS = r"""module adder(input [3:0] a, b, output [4:0] s); assign s = a + b; endmodule
module tb; reg [3:0] a, b; wire [4:0] s; adder dut(.a(a), .b(b), .s(s));
  initial begin a = 4'd9; b = 4'd8; #1;
    if (s == 5'd17) $display("PASS"); else $display("FAIL %0d", s); $finish; end
endmodule
"""


async def test_openmp_two_threads(any_sb: Sandbox) -> None:
    rec = toolchains.get("openmp")
    b = await rec.compile(any_sb, {"omp.c": OMP}, output="omp")
    assert b.ok and b.tool_versions["gcc"].startswith("gcc")
    r = await rec.run(any_sb, b.artifact, threads=2)
    assert r.ok and r.stdout.strip() == "threads=2"


async def test_a_program_reading_its_input_to_the_end_sees_eof(any_sb: Sandbox) -> None:
    # docker's containers never saw EOF on stdin (created detached), so `cat` ran to its
    # wall limit and came out wall_timeout with the right output.
    r = await any_sb.exec(["cat"], stdin="hello\n" * 1000, limits=Limits(wall_s=20))
    assert r.ok and r.stdout == "hello\n" * 1000


async def test_mpi_np2_np4(any_sb: Sandbox) -> None:
    rec = toolchains.get("mpi")
    b = await rec.compile(any_sb, {"allreduce.c": MPI}, output="allreduce")
    assert b.ok, b.exec_result.stderr
    assert "mpicc" in b.tool_versions
    for np, total in ((2, 1), (4, 6)):
        r = await rec.run(any_sb, b.artifact, np=np)
        assert r.ok, r.stderr
        assert r.stdout.strip() == f"size={np} sum={total}"


async def test_cuda_compiles_and_run_is_skipped_without_gpu(any_sb: Sandbox) -> None:
    rec = toolchains.get("cuda")
    ptx = await rec.compile(any_sb, {"fill.cu": CUDA}, output="fill", mode="ptx")
    assert ptx.ok and ptx.artifact == "fill.ptx", ptx.exec_result.stderr
    assert b".entry" in await any_sb.read_file("fill.ptx")
    assert "release 13" in ptx.tool_versions["nvcc"]
    exe = await rec.compile(any_sb, {"fill.cu": CUDA}, output="fill")
    assert exe.ok and exe.artifact == "fill", exe.exec_result.stderr
    r = await rec.run(any_sb, exe.artifact)
    if any_sb.gpu_visible():
        assert r.ok and r.stdout.strip() == "ok"
    else:
        assert r.status is ExecStatus.SKIPPED_NO_GPU and r.exit_code is None


async def test_verilog_testbench_pass_and_verilator_lint(any_sb: Sandbox) -> None:
    rec = toolchains.get("verilog-iverilog")
    b = await rec.compile(any_sb, {"tb.sv": TB_PASS}, output="tb")
    assert b.ok, b.exec_result.stderr
    r = await rec.run(any_sb, b.artifact)
    assert r.ok and r.stdout.strip().splitlines()[0] == "PASS"
    lint = await toolchains.get("verilog-verilator").compile(
        any_sb,
        {"adder.v": "module adder(input [3:0] a, output [1:0] y); assign y = a; endmodule\n"},
        mode="lint",
    )
    assert lint.exec_result.ok
    assert any(
        d.code == "WIDTH" and d.line == 1 and d.severity == "warning" for d in lint.diagnostics
    )
