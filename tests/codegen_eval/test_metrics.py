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
