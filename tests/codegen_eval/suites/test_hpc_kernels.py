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
    parse_verdict,
)
from codegen_eval.suites.hpc_kernels.scorer import fnv1a64
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
        assert set(s.files) == {"harness.h", "p/driver.c"}
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


def test_verdict_needs_the_right_nonce_and_checksum() -> None:
    nonce = "0123456789abcdef"
    payload = "v=1 pass=1 cand_s=0.5 base_s=1 err=0 detail=-"
    good = f"{payload}\nmac={fnv1a64(f'{nonce}|{payload}'):016x}\n"
    v = parse_verdict(good, nonce)
    assert v is not None and v.passed and v.cand_s == 0.5 and v.base_s == 1.0
    assert parse_verdict(good, "another-nonce") is None
    assert parse_verdict(good.replace("pass=1", "pass=0"), nonce) is None  # tampered payload
    assert parse_verdict(payload + "\n", nonce) is None
    assert parse_verdict("PASS\n", nonce) is None


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
