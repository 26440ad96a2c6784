"""Problems of our own in CVDP's JSONL record layout (NVlabs/cvdp_benchmark's
`example_dataset/`): a docker-compose service running pytest on src/test_runner.py, a
src/.env naming SIM/TOPLEVEL/VERILOG_SOURCES/MODULE with container paths (/code, /src),
cocotb 2 tests using cocotb_tools.runner on Icarus. Written for these tests.

* adder: spec to RTL (cid003), one simulation with two cocotb tests;
* counter: code completion (cid002) with a partial file in input.context, parametrized
  over WIDTH in pytest: two builds, two simulations;
* checker: testbench generation (cid012) whose harness calls the commercial xrun;
* a code-comprehension record (cid009) and an agentic record: not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

COMPOSE = """services:
  direct:
    image: __OSS_SIM_IMAGE__
    volumes:
      - ./src/:/src/:ro
    env_file: ./src/.env
    command: pytest -s -o cache_dir=/rundir/harness/.cache /src/test_runner.py -v
"""
COMPOSE_EDA = """services:
  xrun:
    image: __VERIF_EDA_IMAGE__
    volumes:
      - ./src/:/src/:ro
    env_file: ./src/.env
    command: pytest /src/process.py -v -s
"""

ADDER = """module adder4 (input [3:0] a, input [3:0] b, input cin,
               output [3:0] sum, output cout);
  assign {cout, sum} = a + b + cin;
endmodule
"""
ADDER_TEST = """import cocotb
from cocotb.triggers import Timer


async def check(dut, cin):
    for a in range(16):
        for b in range(16):
            dut.a.value = a
            dut.b.value = b
            dut.cin.value = cin
            await Timer(1, unit="ns")
            total = a + b + cin
            assert int(dut.sum.value) == total % 16, f"sum of {a}+{b}+{cin}"
            assert int(dut.cout.value) == total // 16, f"carry of {a}+{b}+{cin}"


@cocotb.test()
async def sums_without_carry(dut):
    await check(dut, 0)


@cocotb.test()
async def sums_with_carry(dut):
    await check(dut, 1)
"""
RUNNER = """import os

from cocotb_tools.runner import get_runner


def test_runner():
    runner = get_runner(os.environ.get("SIM", "icarus"))
    runner.build(
        sources=os.environ["VERILOG_SOURCES"].split(),
        hdl_toplevel=os.environ["TOPLEVEL"],
        always=True,
        timescale=("1ns", "1ns"),
    )
    runner.test(hdl_toplevel=os.environ["TOPLEVEL"], test_module=os.environ["MODULE"])
"""

COUNTER_PARTIAL = """module counter #(parameter WIDTH = 4) (
  input clk, input rst, input en, output reg [WIDTH-1:0] q);
  // complete: q counts up on each clock edge while en is high; rst clears it
endmodule
"""
COUNTER = """module counter #(parameter WIDTH = 4) (
  input clk, input rst, input en, output reg [WIDTH-1:0] q);
  always @(posedge clk)
    if (rst) q <= 0;
    else if (en) q <= q + 1'b1;
endmodule
"""
COUNTER_TEST = """import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, ReadOnly


@cocotb.test()
async def counts_and_wraps(dut):
    width = len(dut.q)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 0
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    dut.en.value = 1
    for step in range(1, 2**width + 3):
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.q.value) == step % 2**width, f"after {step} enabled edges"
"""
COUNTER_RUNNER = """import os

import pytest
from cocotb_tools.runner import get_runner


@pytest.mark.parametrize("width", [3, 5])
def test_counter(width):
    runner = get_runner(os.environ.get("SIM", "icarus"))
    runner.build(
        sources=os.environ["VERILOG_SOURCES"].split(),
        hdl_toplevel=os.environ["TOPLEVEL"],
        parameters={"WIDTH": width},
        build_dir=f"sim_build_w{width}",
        always=True,
        timescale=("1ns", "1ns"),
    )
    runner.test(
        hdl_toplevel=os.environ["TOPLEVEL"],
        test_module=os.environ["MODULE"],
        build_dir=f"sim_build_w{width}",
    )
"""
PROCESS_XRUN = """import subprocess


def test_simulate():
    done = subprocess.run("xrun -coverage all /code/verif/checker_tb.sv", shell=True)
    assert done.returncode == 0, "the simulation did not run"
"""


def env(top: str, source: str, module: str) -> str:
    return (
        f"SIM = icarus\nTOPLEVEL_LANG = verilog\nVERILOG_SOURCES = /code/rtl/{source}\n"
        f"TOPLEVEL = {top}\nMODULE = {module}\nPYTHONPATH = /src\n"
    )


def records() -> list[dict[str, Any]]:
    return [
        {
            "id": "cvdp_copilot_adder_0001",
            "categories": ["cid003", "easy"],
            "input": {
                "prompt": "Design `adder4`: sum and carry out of a + b + cin.",
                "context": {},
            },
            "output": {"response": "", "context": {"rtl/adder4.sv": ADDER}},
            "harness": {
                "files": {
                    "docker-compose.yml": COMPOSE,
                    "src/.env": env("adder4", "adder4.sv", "test_adder4"),
                    "src/test_adder4.py": ADDER_TEST,
                    "src/test_runner.py": RUNNER,
                }
            },
        },
        {
            "id": "cvdp_copilot_counter_0002",
            "categories": ["cid002", "easy"],
            "input": {
                "prompt": "Complete the counter.",
                "context": {"rtl/counter.sv": COUNTER_PARTIAL},
            },
            "output": {"response": "", "context": {"rtl/counter.sv": COUNTER}},
            "harness": {
                "files": {
                    "docker-compose.yml": COMPOSE,
                    "src/.env": env("counter", "counter.sv", "test_counter"),
                    "src/test_counter.py": COUNTER_TEST,
                    "src/test_runner.py": COUNTER_RUNNER,
                }
            },
        },
        {
            "id": "cvdp_copilot_checker_0003",
            "categories": ["cid012", "medium"],
            "input": {"prompt": "Write a testbench for adder4.", "context": {}},
            "output": {
                "response": "",
                "context": {"verif/checker_tb.sv": "module tb; endmodule\n"},
            },
            "harness": {
                "files": {
                    "docker-compose.yml": COMPOSE_EDA,
                    "src/.env": "TARGET = 90\n",
                    "src/process.py": PROCESS_XRUN,
                }
            },
        },
        {
            "id": "cvdp_copilot_explain_0004",
            "categories": ["cid009", "easy"],
            "input": {"prompt": "What does adder4 compute?", "context": {}},
            "output": {"response": "a + b + cin", "context": {}},
            "harness": {},
        },
        {
            "id": "cvdp_agentic_adder_0005",
            "categories": ["cid003", "easy"],
            "system_message": "You are an agent.",
            "prompt": "Design adder4.",
            "context": {},
            "patch": {"rtl/adder4.sv": ADDER},
            "harness": {},
        },
    ]


def write_jsonl(dir: Path, name: str = "cvdp_fixture.jsonl", *, solutions: bool = True) -> Path:
    """The records as a JSONL file; solutions=False empties the output files, as in the
    dataset published without solutions."""
    rows = records()
    if not solutions:
        for r in rows:
            out = r.get("output", {}).get("context", {})
            out.update({k: "" for k in out})
    path = dir / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
