"""hpc-kernels: the dataset, the verdict protocol and the reference solutions passing their own
harness (a representative subset by default, all 45 samples in the slow test)."""

from __future__ import annotations

import asyncio
import time

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.suites.hpc_kernels import (
    PROBLEMS,
    VARIANTS,
    hpc_kernels_task,
    parse_host_verdict,
)
from codegen_eval.suites.hpc_kernels.protocol import new_key, siphash24
from codegen_eval.types import Candidate, FailureClass, Sample, Score, Task


def test_dataset_has_every_problem_in_every_variant() -> None:
    task = get_suite("hpc-kernels")
    assert isinstance(task, Task)
    ids = [s.id for s in task.dataset]
    assert len(ids) == len(PROBLEMS) * len(VARIANTS) == 45
    assert len(set(ids)) == 45
    assert "axpy/openmp" in ids and "cg/mpi-openmp" in ids and "histogram/cuda" in ids
    for s in task.dataset:
        meta = s.metadata
        assert s.id == f"{meta['problem']}/{meta['variant']}"
        assert meta["language"] == ("cuda" if meta["variant"] == "cuda" else "c")
        assert meta["signature"] in s.input  # the exact prototype is in the prompt
        assert "main()" in s.input and "Data contract:" in s.input
        assert s.target.strip() and "main(" not in s.target
        assert set(s.files) == {
            "p/hpck.h",
            "p/hpck_proto.h",
            f"p/guest_main.{'cu' if meta['variant'] == 'cuda' else 'c'}",
            "p/problem.h",
            f"p/call.{'cu' if meta['variant'] == 'cuda' else 'c'}",
        }
        # the host side (inputs, reference, check) never reaches the candidate's sandbox
        assert "void hpck_reference(void) {" not in "".join(s.files.values())
    mpi = next(s for s in task.dataset if s.id == "gemm/mpi")
    assert mpi.metadata["np"] == [1, 2, 4] and mpi.metadata["threads"] == [1]
    assert "rank 0" in mpi.input and "MPI_Init" in mpi.input
    hyb = next(s for s in task.dataset if s.id == "gemm/mpi-openmp")
    assert hyb.metadata["configs"][-1] == [2, 2]


def test_filters_limit_and_unknown_names() -> None:
    task = hpc_kernels_task(variants=["mpi", "cuda"], problems=["scan", "gemv"])
    assert [s.id for s in task.dataset] == ["scan/mpi", "scan/cuda", "gemv/mpi", "gemv/cuda"]
    assert len(hpc_kernels_task(limit=7).dataset) == 7
    with pytest.raises(ValueError, match="unknown"):
        hpc_kernels_task(variants=["opencl"])
    with pytest.raises(ValueError, match="unknown"):
        hpc_kernels_task(problems=["fft"])


def test_siphash_matches_the_reference_vector() -> None:
    # SipHash-2-4 paper, appendix A: key 00..0f, message 00..0e
    assert siphash24(bytes(range(16)), bytes(range(15))) == 0xA129CA6149BE45E5


def test_host_verdict_needs_a_tag_under_this_runs_key() -> None:
    key = new_key()
    body = (
        "HPCK2 status=pass detail=- base_s=1 err=0 cand_s=0.5 cand_mean_s=0.6 cand_windows=0.5,0.7"
    )
    good = f"{body} mac={siphash24(key, body.encode()):016x}"
    v = parse_host_verdict(f"noise\n{good}\n", key)
    assert v is not None and v.status == "pass" and v.cand_s == 0.5 and v.base_s == 1.0
    assert v.windows == (0.5, 0.7)
    assert parse_host_verdict(good, new_key()) is None  # another run's key
    assert parse_host_verdict(good.replace("cand_s=0.5", "cand_s=0.0001"), key) is None
    assert parse_host_verdict(body, key) is None
    assert parse_host_verdict("PASS\nHPCK2 status=pass mac=0000000000000000\n", key) is None


async def _score_references(samples: list[Sample]) -> list[tuple[Sample, Score]]:
    scorer = hpc_kernels_task().scorer
    scores = await asyncio.gather(*(scorer.score(s, Candidate(s.id, 0, s.target)) for s in samples))
    return list(zip(samples, scores, strict=True))


def _assert_reference_results(results: list[tuple[Sample, Score]]) -> None:
    bad = []
    for s, sc in results:
        if s.metadata["variant"] == "cuda":
            # compiled, not run: no GPU here; never a pass or a fail
            ok = sc.status == "skipped" and sc.failure_class == FailureClass.SKIPPED_NO_GPU
        else:
            ok = (
                sc.status == "pass"
                and sc.value == 1.0
                and sc.metrics["runtime_s"] > 0
                and sc.metrics["baseline_s"] > 0
                and sc.metrics["speedup"] > 0
                and abs(
                    sc.metrics["efficiency"]
                    - sc.metrics["speedup"] / (sc.metrics["np"] * sc.metrics["threads"])
                )
                < 1e-12
            )
        if not ok:
            bad.append(f"{s.id}: {sc.status} {sc.failure_class} {sc.explanation[:300]}")
    assert not bad, "\n".join(bad)


async def test_reference_solutions_pass_subset() -> None:
    # three problems of different shape (streaming, stencil with halos, integer reduction)
    task = hpc_kernels_task(problems=["axpy", "jacobi", "histogram"])
    _assert_reference_results(await _score_references(list(task.dataset)))


@pytest.mark.slow
@pytest.mark.timeout(1800)
async def test_reference_solutions_pass_full_suite() -> None:
    t0 = time.monotonic()
    results = await _score_references(list(hpc_kernels_task().dataset))
    _assert_reference_results(results)
    passed = sum(sc.status == "pass" for _, sc in results)
    skipped = sum(sc.status == "skipped" for _, sc in results)
    print(f"\nhpc-kernels reference: {passed} pass, {skipped} skipped (CUDA, no GPU) "
          f"in {time.monotonic() - t0:.0f}s")  # fmt: skip
    assert (passed, skipped) == (36, 9)
