"""Toolchain recipes: diagnostics from real compiler output, artifacts, versions."""

from __future__ import annotations

import pytest

from sandboxes import ExecStatus, open_sandbox, toolchains
from sandboxes.toolchains import (
    Diagnostic,
    parse_gcc,
    parse_iverilog,
    parse_nvcc,
    parse_verilator,
    recipes,
)


def test_registry() -> None:
    assert toolchains.names() == [
        "c",
        "cpp",
        "openmp",
        "mpi",
        "cuda",
        "verilog-iverilog",
        "verilog-verilator",
    ]
    with pytest.raises(KeyError, match="known"):
        toolchains.get("fortran")


def test_parsers_on_recorded_output() -> None:
    gcc = (
        "a.c: In function 'main':\n"
        "a.c:1:21: warning: initialization of 'int' from 'char *' makes integer [-Wint-conversion]\n"
        "a.c:1:33: error: 'y' undeclared (first use in this function)\n"
        "a.c:1:33: note: each undeclared identifier is reported only once\n"
        "x.c:4: fatal error: foo.h: No such file or directory\n"
    )
    d = parse_gcc(gcc)
    assert d[0] == Diagnostic(
        "a.c",
        1,
        21,
        "warning",
        "initialization of 'int' from 'char *' makes integer",
        "-Wint-conversion",
    )
    assert [x.severity for x in d] == ["warning", "error", "note", "error"]
    assert d[3].column is None
    nv = parse_nvcc(
        'k.cu(12): error: expected an expression\nk.cu(3): warning #177-D: variable "x" was declared but never referenced\n'
    )
    assert nv == [
        Diagnostic("k.cu", 12, None, "error", "expected an expression"),
        Diagnostic(
            "k.cu", 3, None, "warning", 'variable "x" was declared but never referenced', "177"
        ),
    ]
    iv = parse_iverilog(
        "t.v:1: syntax error\nt.v:1: error: malformed statement\nt.v:7: warning: implicit net\nI give up.\n"
    )
    assert [(x.line, x.severity, x.message) for x in iv] == [
        (1, "error", "syntax error"), (1, "error", "malformed statement"), (7, "warning", "implicit net"),
    ]  # fmt: skip
    sorry = parse_iverilog("r.sv:21: sorry: This cast operation is not yet supported.\n")
    assert [(x.severity, x.message, x.code) for x in sorry] == [
        ("error", "sorry: This cast operation is not yet supported.", "sorry")
    ]  # iverilog's wording survives: callers classify it as unsupported
    vl = parse_verilator(
        "%Error: top.v:3:5: Can't find definition of variable: 'q'\n%Warning-WIDTH: top.v:1:51: Operator ASSIGNW expects 2 bits\n"
    )
    assert vl[0] == Diagnostic(
        "top.v", 3, 5, "error", "Can't find definition of variable: 'q'", None
    )
    assert vl[1].code == "WIDTH" and vl[1].severity == "warning"


async def test_compile_errors_become_diagnostics() -> None:
    async with open_sandbox() as sb:
        b = await toolchains.get("c").compile(
            sb, {"bad.c": "int main(void){ return y; }\n", "util.h": "#pragma once\n"}
        )
        assert not b.ok and b.artifact is None
        assert b.exec_result.status is ExecStatus.NONZERO_EXIT
        assert any(
            d.file == "bad.c"
            and d.line == 1
            and d.severity == "error"
            and "undeclared" in d.message
            for d in b.errors
        )
        cpp = await toolchains.get("cpp").compile(
            sb,
            {"m.cpp": "#include <vector>\nint main(){ std::vector<int> v{1}; return v[0]-1; }\n"},
        )
        assert cpp.ok and cpp.tool_versions["g++"].startswith("g++")
        assert (await toolchains.get("cpp").run(sb, cpp.artifact)).ok
        bad_v = await toolchains.get("verilog-iverilog").compile(
            sb, {"t.v": "module t; initial begin x = ; end endmodule\n"}
        )
        assert not bad_v.ok and bad_v.errors and bad_v.errors[0].file == "t.v"
        bad_cu = await toolchains.get("cuda").compile(
            sb, {"k.cu": "__global__ void k(){ int x = ; }\n"}, mode="ptx"
        )
        assert not bad_cu.ok and bad_cu.errors[0].line == 1 and bad_cu.errors[0].file == "k.cu"


async def test_cuda_cubin_and_versions_are_cached() -> None:
    async with open_sandbox() as sb:
        b = await toolchains.get("cuda").compile(
            sb, {"k.cu": "__global__ void k(int *x){ x[0] = 1; }\n"}, output="k", mode="cubin"
        )
        assert b.ok and b.artifact == "k.cubin"
        assert (await sb.read_file("k.cubin"))[:4] == b"\x7fELF"
    assert "nvcc" in recipes._versions
    recipes._versions["nvcc"] = "cached-marker"
    try:
        assert (await toolchains.get("cuda").versions()) == {"nvcc": "cached-marker"}
    finally:
        del recipes._versions["nvcc"]


@pytest.mark.slow
async def test_verilator_binary_build_and_run() -> None:
    tb = (
        "module tb; reg [7:0] c = 0; always #2 c = c + 1;\n"
        '  initial begin #11; if (c == 5) $display("PASS"); else $display("FAIL %0d", c); $finish; end\n'
        "endmodule\n"
    )
    rec = toolchains.get("verilog-verilator")
    async with open_sandbox() as sb:
        b = await rec.compile(sb, {"tb.sv": tb}, output="sim")
        assert b.ok, b.exec_result.stderr[-2000:]
        assert b.artifact == "obj_dir/sim"
        r = await rec.run(sb, b.artifact)
        assert r.ok and "PASS" in r.stdout
