"""One selection rule for every suite and reader (issue 32 item 6): a --filter glob matches
the qualified id SUITE/ID or any '/'-tail of it, --match is a substring, --sample-id exact;
ids stored in logs are unchanged, and logs written before the rule resume with the old one."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from codegen_eval.cli_select import reader_glob_notes, selection_from_args
from codegen_eval.problem_ids import Selection, closest_ids, id_tails, qualified_id
from codegen_eval.readers import load_humaneval
from codegen_eval.registry import get_suite
from codegen_eval.runner import RunConfig, select_samples
from codegen_eval.selection import SelectionError, check_selection
from codegen_eval.types import Sample, Task

HUMANEVAL = Path(__file__).parent / "humaneval_fixture" / "problems.jsonl"
BUILT_IN = ("verilog", "omp-pragma", "mpi-completion", "hpc-kernels")


def _tasks() -> list[Task]:
    """The four built-in suites and one reader, each with its own id scheme."""
    return [get_suite(name) for name in BUILT_IN] + [load_humaneval(HUMANEVAL)]


def _name(task: Task, sample_id: str) -> str:
    """The id without its suite: what a user calls the problem."""
    return qualified_id(task.name, sample_id).split("/", 1)[1]


def test_qualified_ids_of_every_scheme() -> None:
    assert qualified_id("verilog", "p01_basic_gates") == "verilog/p01_basic_gates"
    assert qualified_id("omp-pragma", "omp-pragma/atomic_histogram") == (
        "omp-pragma/atomic_histogram"
    )  # the stored prefix is not doubled
    assert id_tails("hpc-kernels", "axpy/serial") == [
        "hpc-kernels/axpy/serial",
        "axpy/serial",
        "serial",
    ]
    assert id_tails("humaneval", "HumanEval/0")[1:] == ["HumanEval/0", "0"]


@pytest.mark.parametrize("task", _tasks(), ids=lambda t: t.name)
def test_a_name_glob_selects_the_same_kind_of_thing_in_every_suite(task: Task) -> None:
    """`--filter 'NAME*'` selects the problems whose name (the id past the suite) starts so,
    whatever the suite's scheme; under the old rule (the stored id only) omp-pragma's and
    mpi-completion's prefixed ids matched no such glob."""
    first = _name(task, task.dataset[0].id)
    prefix = first[:4]
    chosen = {s.id for s in select_samples(task, RunConfig(filter=f"{prefix}*"))}
    expected = {s.id for s in task.dataset if _name(task, s.id).startswith(prefix)}
    assert chosen and chosen == expected
    # the qualified form selects the same, and so does the stored id's own glob
    qualified = RunConfig(filter=f"{task.name}/{prefix}*")
    assert {s.id for s in select_samples(task, qualified)} == expected


def test_atomic_star_across_all_suites() -> None:
    picked = {
        t.name: [s.id for s in select_samples(t, RunConfig(filter="atomic*"))] for t in _tasks()
    }
    assert picked["omp-pragma"] == ["omp-pragma/atomic_histogram"]
    assert not any(ids for name, ids in picked.items() if name != "omp-pragma")
    # a kernel name selects its variants; a variant name selects it in every kernel
    hpc = get_suite("hpc-kernels")
    axpy = [s.id for s in select_samples(hpc, RunConfig(filter="axpy*"))]
    assert axpy == [s.id for s in hpc.dataset if s.id.startswith("axpy/")] and len(axpy) == 5
    serial = select_samples(hpc, RunConfig(filter="serial"))
    assert len(serial) == 9 and all(s.id.endswith("/serial") for s in serial)


def test_match_is_a_case_insensitive_substring_and_sample_id_exact() -> None:
    tasks = _tasks()
    config = RunConfig(selection=Selection.of(substrings="HISTOGRAM"))
    chosen = {t.name: [s.id for s in select_samples(t, config)] for t in tasks}
    assert chosen["omp-pragma"] == ["omp-pragma/atomic_histogram"]
    assert len(chosen["hpc-kernels"]) == 5  # histogram/serial ... histogram/cuda
    exact = RunConfig(selection=Selection.of(ids=["hpc-kernels/axpy/serial", "p01_basic_gates"]))
    chosen = {t.name: [s.id for s in select_samples(t, exact)] for t in tasks}
    assert chosen["hpc-kernels"] == ["axpy/serial"] and chosen["verilog"] == ["p01_basic_gates"]
    # options narrow together: a glob and a substring both hold
    both = RunConfig(selection=Selection.of(globs="*/mpi*", substrings="gemv"))
    assert [s.id for s in select_samples(get_suite("hpc-kernels"), both)] == [
        "gemv/mpi",
        "gemv/mpi-openmp",
    ]


def test_a_selection_of_nothing_names_the_closest_ids() -> None:
    tasks = _tasks()
    with pytest.raises(SelectionError) as err:
        check_selection(tasks, RunConfig(filter="atomc_hist*"))
    message = str(err.value)
    assert "\n" not in message and "--filter 'atomc_hist*' matches no problem id" in message
    assert "closest: omp-pragma/atomic_histogram" in message
    with pytest.raises(SelectionError, match=r"--sample-id 'axpy/seriall' names no problem; "
                       r"closest: hpc-kernels/axpy/serial"):  # fmt: skip
        check_selection(tasks, RunConfig(selection=Selection.of(ids=["axpy/seriall"])))
    assert closest_ids("p01_basic", [("verilog", "p01_basic_gates")]) == ["verilog/p01_basic_gates"]


def test_options_parse_into_one_selection_and_old_logs_keep_their_rule() -> None:
    args = argparse.Namespace(filter=["a*"], match=["x"], sample_id=["p01,p02", "p03"])
    sel = selection_from_args(args)
    assert sel == Selection(("a*",), ("x",), ("p01", "p02", "p03"), whole_id=False)
    # a log written before the rule recorded --filter as one string: resumed, it is a glob on
    # the stored id only, so it selects what it selected then ('serial' selected nothing)
    legacy = selection_from_args(argparse.Namespace(filter="serial", match=None, sample_id=None))
    assert legacy.whole_id
    hpc = get_suite("hpc-kernels")
    assert not select_samples(hpc, RunConfig(selection=legacy))
    assert len(select_samples(hpc, RunConfig(selection=Selection.of("serial")))) == 9


def test_reader_globs_are_deprecated_with_a_note() -> None:
    notes = reader_glob_notes(argparse.Namespace(rtllm_problems=["adder_*"], cvdp_problems=None))
    assert (
        len(notes) == 1
        and "--rtllm-problems is deprecated: use --filter 'rtllm/GLOB'" in (notes[0])
    )


def _verilogeval_like() -> Task:
    """VerilogEval's id shape, with one problem excluded (its reference fails here)."""
    ids = ["Prob001_zero", "Prob027_fadd", "Prob086_lfsr5", "Prob110_fsm2"]
    return Task(
        name="verilogeval-spec-to-rtl",
        dataset=[Sample(id=i, input=f"spec of {i}") for i in ids],
        scorer=get_suite("verilog").scorer,
        excluded={"Prob082_lfsr32": "the reference fails here: TIMEOUT"},
    )


def test_closest_ids_find_a_typo_in_one_word_and_excluded_ids() -> None:
    task = _verilogeval_like()
    with pytest.raises(SelectionError) as err:
        check_selection([task], RunConfig(filter="lsfr*"))
    assert "closest: verilogeval-spec-to-rtl/Prob086_lfsr5" in str(err.value)
    with pytest.raises(SelectionError) as err:  # an excluded problem is a near miss too
        check_selection([task], RunConfig(selection=Selection.of(ids="Prob082_lfsr")))
    assert "closest: verilogeval-spec-to-rtl/Prob082_lfsr32" in str(err.value)


def test_selecting_only_excluded_problems_says_why_they_do_not_run() -> None:
    task = _verilogeval_like()
    with pytest.raises(SelectionError) as err:
        check_selection([task], RunConfig(selection=Selection.of(ids="Prob082_lfsr32")))
    assert "selects only excluded problems (1), none to run" in str(err.value)
    assert "Prob082_lfsr32: the reference fails here: TIMEOUT" in str(err.value)
