"""hpc-kernels: the dataset, the verdict protocol and the reference solutions passing their own
harness (a representative subset by default, all 45 samples in the slow test)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.suites.hpc_kernels import (
    PROBLEMS,
    VARIANTS,
    hpc_kernels_task,
    parse_host_verdict,
)
from codegen_eval.suites.hpc_kernels.protocol import new_key, siphash24
from codegen_eval.suites.hpc_kernels.trusted import HARNESS_DIR, PROBLEMS_DIR, SHARED_C_DIR
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


def _host_program(tmp_path: Path, problem: str, main: str) -> str:
    """Build `main` (C) with the host side of `problem` (hpck.h, reference.c) and run it."""
    exe = tmp_path / f"{problem}-host"
    src = tmp_path / f"{problem}-main.c"
    src.write_text('#include "hpck.h"\n' + main)
    subprocess.run(
        ["gcc", "-O2", "-std=gnu11", "-DHPCK_HOST", "-DHPCK_FAMILY_SHARED",
         f"-I{HARNESS_DIR}", f"-I{SHARED_C_DIR}", f"-I{PROBLEMS_DIR / problem}",
         str(src), str(PROBLEMS_DIR / problem / "reference.c"), "-o", str(exe), "-lm"],
        check=True,
    )  # fmt: skip
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout


def test_inputs_are_siphash_of_a_counter_under_the_secret_seed(tmp_path: Path) -> None:
    # A keyed PRF: no output gives the key or another output away (splitmix64 did, from two).
    out = _host_program(
        tmp_path,
        "axpy",
        r"""int main(void) {
            hpck_seed k = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
            hpck_rng a = hpck_stream(k, 0), b = hpck_stream(k, 3);
            for (int i = 0; i < 3; ++i) printf("%llu\n", (unsigned long long)hpck_next(&a));
            printf("%llu\n", (unsigned long long)hpck_at(&b, 5));
        }""",
    )
    key = bytes(range(16))
    want = [siphash24(key, c.to_bytes(7, "little")) for c in (0, 1, 2, 3 << 48 | 5)]
    assert [int(v) for v in out.split()] == want


def test_inputs_keep_their_documented_distributions(tmp_path: Path) -> None:
    seeds = "hpck_seed s[] = {{1, 2}, {3, 4}, {5, 6}};"
    # maxloc: the maximum occurs (at least) twice, as an ordinary value of a secret range
    out = _host_program(tmp_path, "maxloc", seeds + r"""
        int main(void) {
            size_t sz[HPCK_MAXBUF] = {0}; void *b[HPCK_MAXBUF];
            hpck_layout(1, 0, sz);
            for (int k = 0; k < hpck_nbuf; ++k) b[k] = calloc(1, sz[k]);
            for (int t = 0; t < 3; ++t) {
                hpck_generate(s[t]); hpck_scatter(1, 0, b);
                const double *x = b[1]; double mx = x[0], mn = x[0]; long copies = 0;
                for (long i = 0; i < N; ++i) { mx = x[i] > mx ? x[i] : mx; mn = x[i] < mn ? x[i] : mn; }
                for (long i = 0; i < N; ++i) copies += x[i] == mx;
                printf("%ld %g %g\n", copies, mn, mx);
            }
        }""")  # fmt: skip
    ranges = [line.split() for line in out.splitlines()]
    assert len(ranges) == 3 and all(c == "2" for c, _, _ in ranges)
    assert all(-5 <= float(lo) < -1 and 1 <= float(hi) < 5 for _, lo, hi in ranges)
    assert len({hi for _, _, hi in ranges}) == 3  # the upper end differs per seed
    # histogram: one hot bin with about a quarter of the values; scan: uniform in [-1000, 1000]
    out = _host_program(tmp_path, "histogram", seeds + r"""
        int main(void) {
            static long long c[NBINS]; size_t sz[HPCK_MAXBUF] = {0}; void *b[HPCK_MAXBUF];
            hpck_layout(1, 0, sz);
            for (int k = 0; k < hpck_nbuf; ++k) b[k] = calloc(1, sz[k]);
            hpck_generate(s[0]); hpck_scatter(1, 0, b);
            for (long i = 0; i < N; ++i) c[((int *)b[1])[i]]++;
            long long hot = 0, cold = N;
            for (int k = 0; k < NBINS; ++k) { hot = c[k] > hot ? c[k] : hot; cold = c[k] < cold ? c[k] : cold; }
            printf("%g %g\n", (double)hot / N, (double)cold / N);
        }""").split()  # fmt: skip
    assert abs(float(out[0]) - (0.25 + 0.75 / 256)) < 0.002 and float(out[1]) > 0.0025
    out = _host_program(tmp_path, "scan", seeds + r"""
        int main(void) {
            size_t sz[HPCK_MAXBUF] = {0}; void *b[HPCK_MAXBUF];
            hpck_layout(1, 0, sz);
            for (int k = 0; k < hpck_nbuf; ++k) b[k] = calloc(1, sz[k]);
            hpck_generate(s[0]); hpck_scatter(1, 0, b);
            const long long *x = b[1]; long long lo = 0, hi = 0, sum = 0;
            for (long i = 0; i < N; ++i) { lo = x[i] < lo ? x[i] : lo; hi = x[i] > hi ? x[i] : hi; sum += x[i]; }
            printf("%lld %lld %g\n", lo, hi, (double)sum / N);
        }""").split()  # fmt: skip
    assert out[:2] == ["-1000", "1000"] and abs(float(out[2])) < 2


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
