"""VerilogEval readers on small datasets written here in the public layouts (our own problems,
not upstream ones), scored end to end with the real toolchain."""

from __future__ import annotations

import json
from pathlib import Path

from codegen_eval.readers.verilogeval import (
    KNOWN_BAD,
    instrument_testbench,
    read_v1,
    read_v2,
    register_verilogeval,
    verilogeval,
)
from codegen_eval.registry import get_suite
from codegen_eval.types import Candidate, Sample

MAJ_IFC = "module {name} (\n  input a,\n  input b,\n  input c,\n  output y\n);"
MAJ_BODY = "  assign y = (a & b) | (a & c) | (b & c);\nendmodule\n"
TOG_IFC = "module {name} (\n  input clk,\n  input reset,\n  input t,\n  output reg q\n);"
TOG_BODY = "  always @(posedge clk)\n    if (reset) q <= 0;\n    else if (t) q <= ~q;\nendmodule\n"


def _tb(inputs: list[str], output: str, ref: str, dut: str, clocked: bool, n: int) -> str:
    """A testbench in the upstream style: stimulus module that calls $finish, module tb with a
    stats struct, a final block printing `Mismatches: N in M samples` and a TIMEOUT guard."""
    ins = ", ".join(i for i in inputs if i != "clk")
    conns = ", ".join(f".{i}" for i in inputs)
    return f"""`timescale 1 ps/1 ps
module stimulus_gen (input clk, output logic {ins});
  initial begin
    {{{ins}}} <= 0;
    repeat({n}) @(posedge clk, negedge clk) {{{ins}}} <= $random;
    #1 $finish;
  end
endmodule

module tb();
  typedef struct packed {{ int errors; int clocks; }} stats;
  stats stats1;
  reg clk = 0;
  initial forever #5 clk = ~clk;
  logic {ins};
  logic {output}_ref, {output}_dut;
  wire tb_match;
  stimulus_gen stim1 (.clk, .*);
  {ref} good1 ({conns}, .{output}({output}_ref));
  {dut} top_module1 ({conns}, .{output}({output}_dut));
  assign tb_match = ({output}_ref === ({output}_ref ^ {output}_dut ^ {output}_ref));
  final begin
    $display("Hint: Total mismatched samples is %1d out of %1d samples\\n", stats1.errors, stats1.clocks);
    $display("Mismatches: %1d in %1d samples", stats1.errors, stats1.clocks);
  end
  always @(posedge clk, negedge clk) begin
    stats1.clocks++;
    if (!tb_match) stats1.errors++;
  end
  initial begin
    #{"1000000" if clocked else "100000"}
    $display("TIMEOUT");
    $finish();
  end
endmodule
"""


def _write_v2(root: Path) -> Path:
    d = root / "dataset_code-complete-iccad2023"
    d.mkdir(parents=True)
    probs = {
        "Prob001_majority3": (MAJ_IFC, MAJ_BODY, ["a", "b", "c"], "y", False),
        "Prob002_toggle_ff": (TOG_IFC, TOG_BODY, ["clk", "reset", "t"], "q", True),
    }
    for pid, (ifc, body, ins, o, clocked) in probs.items():
        spec = (
            "Output y is 1 when at least two of a, b, c are 1."
            if not clocked
            else ("A T flip-flop: q toggles at a rising clock edge when t is 1; reset clears q.")
        )
        (d / f"{pid}_prompt.txt").write_text(f"\n{spec}\n\n{ifc.format(name='TopModule')}\n\n")
        (d / f"{pid}_ref.sv").write_text(ifc.format(name="RefModule") + "\n" + body)
        (d / f"{pid}_test.sv").write_text(_tb(ins, o, "RefModule", "TopModule", clocked, 60))
    # a known-bad number and a problem with no testbench are reported, not counted
    (d / "Prob099_broken_prompt.txt").write_text("whatever\n")
    (d / "Prob003_orphan_prompt.txt").write_text("no files\n")
    return d


async def _score(task_sample: Sample, scorer, code: str):
    return await scorer.score(task_sample, Candidate(task_sample.id, 0, code))


async def test_v2_reader_scores_with_the_same_machinery(tmp_path: Path) -> None:
    _write_v2(tmp_path)
    task = verilogeval(tmp_path, "code-complete", lint=False)
    assert [s.id for s in task.dataset] == ["Prob001_majority3", "Prob002_toggle_ff"]
    excluded = dict(task.metadata["excluded"])
    assert "known bad upstream" in excluded["Prob099_broken"]
    assert "missing" in excluded["Prob003_orphan"]
    maj, tog = task.dataset
    assert "module TopModule" in maj.input and maj.metadata["interface"].startswith(
        "module TopModule"
    )

    for s in task.dataset:  # every reference passes its own testbench
        score = await _score(s, task.scorer, s.target)
        assert score.status == "pass", (s.id, score.failure_class, score.explanation)
        assert score.metrics["samples"] > 0 and score.metrics["mismatches"] == 0

    # code-complete: a body alone is completed with the prompt's interface
    assert (await _score(maj, task.scorer, MAJ_BODY)).status == "pass"
    wrong = await _score(maj, task.scorer, "  assign y = a & b & c;\nendmodule\n")
    assert wrong.failure_class == "sim_mismatch" and wrong.metrics["mismatches"] > 0
    fake = TOG_IFC.format(name="TopModule") + (
        '\n  initial q = 0;\n  final $display("Mismatches: 0 in 121 samples");\nendmodule\n'
    )
    forged = await _score(tog, task.scorer, fake)
    assert forged.failure_class == "sim_mismatch" and forged.metrics["mismatches"] > 0
    broken = await _score(tog, task.scorer, "module TopModule(input clk; endmodule")
    assert broken.failure_class == "compile_error:syntax"


def test_known_bad_can_be_included_and_the_table_has_reasons(tmp_path: Path) -> None:
    _write_v2(tmp_path)
    assert all(reason for reason in KNOWN_BAD.values())
    res = read_v2(tmp_path, "code-complete", include_known_bad=True)
    ids = {s.id for s in res.samples} | {i for i, _ in res.excluded}
    assert "Prob099_broken" in ids and all("known bad" not in r for _, r in res.excluded)


def test_instrumentation_tags_names_and_adds_the_verdict() -> None:
    tb = instrument_testbench(_tb(["a", "b", "c"], "y", "RefModule", "TopModule", False, 5))
    assert "module tb___TAG__();" in tb and "stats1___TAG__" in tb and "good1___TAG__" in tb
    assert "CGE-VERDICT" in tb and "cge_to___TAG__ = 1;" in tb
    assert "module tb();" not in tb


async def test_registered_suite_from_a_user_path(tmp_path: Path) -> None:
    _write_v2(tmp_path)
    name = register_verilogeval(tmp_path, "code-complete", name="verilogeval-test-local")
    task = get_suite(name, problems="*majority*", lint=False)
    assert [s.id for s in task.dataset] == ["Prob001_majority3"]


async def test_v1_jsonl_reader(tmp_path: Path) -> None:
    header = MAJ_IFC.format(name="top_module") + "\n"
    test = _tb(["a", "b", "c"], "y", "reference_module", "top_module", False, 40)
    test = MAJ_IFC.format(name="reference_module") + "\n" + MAJ_BODY + "\n" + test
    rows = [
        {"task_id": "majority3", "prompt": header, "canonical_solution": MAJ_BODY, "test": test},
        {
            "task_id": "dff8",
            "prompt": "module top_module();\n",
            "canonical_solution": "endmodule",
            "test": test,
        },
        {
            "task_id": "no_summary",
            "prompt": header,
            "canonical_solution": MAJ_BODY,
            "test": "module tb(); initial $finish; endmodule",
        },
    ]
    probs = tmp_path / "Eval.jsonl"
    probs.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    descs = tmp_path / "Descriptions.jsonl"
    descs.write_text(
        json.dumps(
            {
                "task_id": "majority3",
                "detail_description": "Majority vote.",
                "simple_description": "maj",
            }
        )
        + "\n"
    )

    res = read_v1(probs, descs)
    assert [s.id for s in res.samples] == ["majority3"]
    reasons = dict(res.excluded)
    assert "known bad" in reasons["dff8"] and "unsupported testbench" in reasons["no_summary"]
    s = res.samples[0]
    assert s.input.startswith("Majority vote.") and "module top_module" in s.input

    task = verilogeval(probs, "v1", descriptions=descs, lint=False)
    ok = await _score(s, task.scorer, s.target)
    assert ok.status == "pass", ok.explanation
    body_only = await _score(s, task.scorer, MAJ_BODY)  # completion style
    assert body_only.status == "pass"
    bad = await _score(s, task.scorer, "  assign y = a | b | c;\nendmodule\n")
    assert bad.failure_class == "sim_mismatch"


def test_cli_runs_a_verilogeval_copy_and_logs_the_exclusions(tmp_path: Path, capsys) -> None:
    """`codegen-eval run --verilogeval PATH`: the reader's task goes through the real runner
    (reference solver, iverilog in the sandbox); excluded problems are logged with reasons."""
    import json

    from codegen_eval import cli

    _write_v2(tmp_path / "ve")
    log = tmp_path / "ve.jsonl"
    argv = ["run", "--verilogeval", str(tmp_path / "ve"), "--verilogeval-mode", "code-complete",
            "--solver", "reference", "--log", str(log), "--no-progress"]  # fmt: skip
    assert cli.main(argv) == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    scores = {r["sample_id"]: r["status"] for r in records if r["type"] == "score"}
    assert scores == {"Prob001_majority3": "pass", "Prob002_toggle_ff": "pass"}
    excluded = {r["sample_id"]: r["reason"] for r in records if r["type"] == "excluded"}
    assert "known bad upstream" in excluded["Prob099_broken"]
    assert "missing" in excluded["Prob003_orphan"]
    assert cli.main(["run", "--verilogeval", str(tmp_path / "nope"), "--solver", "reference"]) != 0
    assert "does not exist" in capsys.readouterr().err
