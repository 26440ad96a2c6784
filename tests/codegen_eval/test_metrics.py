"""Metric formulas against brute-force enumeration over all k-subsets."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from codegen_eval.metrics import (
    efficiency_at_k,
    expected_max_of_k,
    failure_table,
    failure_totals,
    mean_pass_at_k,
    pass_at_k,
    speedup_at_k,
)


def brute_pass(n: int, c: int, k: int) -> float:
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)


def brute_best(values: list[float], k: int) -> float:
    subsets = list(itertools.combinations(values, k))
    return sum(max(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_pass_at_k_matches_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_pass(n, c, k), abs=1e-12)


def test_pass_at_k_edges() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 6, 5) == 1.0  # n - c < k
    assert pass_at_k(5, 1, 1) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="at least 5"):
        pass_at_k(3, 1, 5)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_pass_at_k_large_n_is_stable() -> None:
    # C(2000, 100) overflows a float; the product form must not
    v = pass_at_k(2000, 3, 100)
    exact = 1 - math.comb(1997, 100) / math.comb(2000, 100)
    assert v == pytest.approx(exact, rel=1e-9)
    assert 0.0 < v < 1.0


def test_mean_pass_at_k_skips_small_n() -> None:
    assert mean_pass_at_k([(1, 1), (5, 0)], 2) == 0.0
    assert mean_pass_at_k([(1, 1)], 2) is None
    assert mean_pass_at_k([(2, 1), (2, 2)], 1) == pytest.approx(0.75)


def test_expected_best_matches_enumeration_randomized() -> None:
    rng = random.Random(7)
    for _ in range(40):
        n = rng.randint(1, 8)
        values = [rng.choice([0.0, rng.uniform(0, 10)]) for _ in range(n)]
        for k in range(1, n + 1):
            assert expected_max_of_k(values, k) == pytest.approx(brute_best(values, k), rel=1e-12)


def test_speedup_is_best_not_worst_of_k() -> None:
    s = [0.5, 4.0, 1.0]
    # best of 2: pairs (0.5,4)->4, (0.5,1)->1, (4,1)->4 => 3.0 ; worst-of-2 would be 0.8333
    assert speedup_at_k(s, 2) == pytest.approx(3.0)
    assert speedup_at_k(s, 1) == pytest.approx(sum(s) / 3)
    assert speedup_at_k(s, 3) == pytest.approx(4.0)


def test_failed_samples_count_zero() -> None:
    assert speedup_at_k([None, None], 1) == 0.0
    assert speedup_at_k([None, 2.0], 1) == pytest.approx(1.0)
    assert speedup_at_k([None, 2.0], 2) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        speedup_at_k([1.0], 2)


def test_efficiency_divides_by_resources_before_taking_best() -> None:
    # speedups 3 on 4 threads (0.75) and 1.9 on 2 threads (0.95): best efficiency is 0.95
    assert efficiency_at_k([3.0, 1.9], [4, 2], 2) == pytest.approx(0.95)
    vals = [3.0, None, 1.0, 2.0]
    res = [4.0, 2.0, 1.0, 2.0]
    effs = [0.75, 0.0, 1.0, 1.0]
    for k in range(1, 5):
        assert efficiency_at_k(vals, res, k) == pytest.approx(brute_best(effs, k))


def test_failure_table_groups_details() -> None:
    t = failure_table(
        [
            "compile_error:syntax",
            "compile_error:undeclared",
            "compile_error:syntax",
            None,
            "timeout",
        ]
    )
    assert t["compile_error"]["syntax"] == 2
    assert t["timeout"][""] == 1
    assert failure_totals(t) == {"compile_error": 3, "timeout": 1}


def test_pareval_formulas_are_upstreams() -> None:
    from codegen_eval.metrics import (
        expected_max_of_k,
        pareval_efficiency_at_k,
        pareval_speedup_at_k,
    )

    runtimes, baseline = [2.0, 1.0, 4.0], 4.0  # speedups 2, 4, 1
    assert pareval_speedup_at_k(runtimes, baseline, 1) == pytest.approx(7 / 3)
    # k=2: upstream weights runtime j by nCr(j-1, 1)/nCr(3, 2), the chance it is the slower of
    # a pair (worst of 2 would be (2 + 1 + 1) / 3), but its nCr(0, 1) is 1, not 0, so the
    # fastest sample adds 4/3: (4 + 2 + 2*1) / 3. Best of 2 (ours) is (4 + 4 + 2) / 3.
    assert pareval_speedup_at_k(runtimes, baseline, 2) == pytest.approx(8 / 3)
    assert expected_max_of_k([2.0, 4.0, 1.0], 2) == pytest.approx(10 / 3)
    # fewer passing samples than k: upstream's nCr(n<r) = 1 makes it the plain sum
    assert pareval_speedup_at_k([2.0], baseline, 5) == pytest.approx(2.0)
    assert pareval_speedup_at_k([0.0], 1.0, 1) == pytest.approx(1e8)  # runtimes floored at 1e-8
    assert pareval_efficiency_at_k(runtimes, baseline, 4, 1) == pytest.approx(7 / 12)
    with pytest.raises(ValueError):
        pareval_efficiency_at_k(runtimes, baseline, 0, 1)


def test_report_shows_both_speedup_estimators() -> None:
    from codegen_eval.report import summarize_group

    def rec(pid: str, status: str, runtime: float) -> dict:
        m = {
            "runtime_s": runtime,
            "best_sequential_s": 1.0,
            "speedup": 1.0 / runtime,
            "resources": 2.0,
        }
        return {"sample_id": pid, "status": status, "metrics": m if status == "pass" else {}}

    records = [
        rec("a", "pass", 0.5),
        rec("a", "pass", 0.25),
        rec("b", "fail", 1.0),
        rec("b", "fail", 1.0),
    ]
    g = summarize_group("pareval", records, (1, 2))
    # upstream: only problem a (b has no passing sample): mean of 2 and 4 at k=1, and at
    # k = N = 2 the sum 2 + 4 (its nCr(0, 1) = 1), more than either sample
    assert g.upstream_speedup_at == {1: pytest.approx(3.0), 2: pytest.approx(6.0)}
    assert g.upstream_efficiency_at[1] == pytest.approx(1.5)
    # ours: both problems, failures count 0, best of 2
    assert g.speedup_at == {1: pytest.approx(1.5), 2: pytest.approx(2.0)}
