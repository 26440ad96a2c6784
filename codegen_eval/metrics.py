"""Metrics over scored candidates: unbiased pass@k, speedup_n@k / efficiency_n@k, failure tables.

pass@k (Chen et al. 2021): with n samples of which c pass, the probability that at least one of
k samples drawn without replacement passes, 1 - C(n-c, k) / C(n, k). It is computed as a product
of ratios so that large n never overflows or loses precision.

speedup_n@k and efficiency_n@k are the EXPECTED BEST of k samples drawn without replacement from
the n: sort the values v_(1) <= ... <= v_(n); the k-subset's maximum is v_(i) with probability
C(i-1, k-1) / C(n, k). (A widely used implementation takes the minimum for k > 1; ours is the
maximum, as "best of k" means.) Convention: a candidate that did not pass contributes speedup 0,
so a model that is fast but wrong is not rewarded.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with `n` samples of which `c` are correct."""
    if not (0 <= c <= n):
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if n < k:
        raise ValueError(f"pass@{k} needs at least {k} samples, got n={n}")
    if n - c < k:
        return 1.0  # every k-subset contains a correct sample
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i): the ratio C(n-c,k)/C(n,k) without huge binomials
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def expected_max_of_k(values: Sequence[float], k: int) -> float:
    """E[max of a uniformly random k-subset of `values`] (k-subsets without replacement)."""
    n = len(values)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if n < k:
        raise ValueError(f"best-of-{k} needs at least {k} values, got {n}")
    ordered = sorted(values)
    total = math.comb(n, k)
    # Exact integer binomials, then one correctly rounded division each: stable for any n
    # a run can produce (Python ints do not overflow).
    return sum(math.comb(i - 1, k - 1) / total * ordered[i - 1] for i in range(k, n + 1))


def speedup_at_k(speedups: Sequence[float | None], k: int) -> float:
    """speedup_n@k for one problem: expected best speedup of k of the n samples.
    `None` (a failed sample, or one without a timing) counts as 0."""
    return expected_max_of_k([s if s is not None and s > 0 else 0.0 for s in speedups], k)


def efficiency_at_k(speedups: Sequence[float | None], resources: Sequence[float], k: int) -> float:
    """efficiency_n@k: expected best of speedup/resources (threads, ranks) over k samples."""
    if len(speedups) != len(resources):
        raise ValueError("speedups and resources must have the same length")
    eff = [
        (s / r if s is not None and s > 0 and r > 0 else 0.0)
        for s, r in zip(speedups, resources, strict=True)
    ]
    return expected_max_of_k(eff, k)


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean pass@k over problems given (n, c) pairs. Problems with n < k are left out (pass@k
    is not defined for them); None when no problem qualifies."""
    values = [pass_at_k(n, c, k) for n, c in counts if n >= k]
    return sum(values) / len(values) if values else None


def mean_speedup_at_k(per_problem: Iterable[Sequence[float | None]], k: int) -> float | None:
    values = [speedup_at_k(s, k) for s in per_problem if len(s) >= k]
    return sum(values) / len(values) if values else None


def mean_efficiency_at_k(
    per_problem: Iterable[tuple[Sequence[float | None], Sequence[float]]], k: int
) -> float | None:
    values = [efficiency_at_k(s, r, k) for s, r in per_problem if len(s) >= k]
    return sum(values) / len(values) if values else None


def failure_table(failure_classes: Iterable[str | None]) -> dict[str, Counter[str]]:
    """Count failure classes grouped by the part before the colon; the inner counter holds the
    details ("" for none). `None` (a pass) is not counted."""
    table: dict[str, Counter[str]] = {}
    for fc in failure_classes:
        if not fc:
            continue
        head, _, detail = fc.partition(":")
        table.setdefault(head, Counter())[detail] += 1
    return table


def failure_totals(table: Mapping[str, Counter[str]]) -> dict[str, int]:
    return {head: sum(c.values()) for head, c in sorted(table.items())}


# ------------------------------------------------------------------ ParEval's own formulas
def _upstream_ncr(n: int, r: int) -> int:
    """ParEval's nCr: 1 when n < r (so k above the number of passing samples still counts)."""
    return 1 if n < r else math.comb(n, r)


def pareval_speedup_at_k(runtimes: Sequence[float], baseline_s: float, k: int) -> float:
    """speedup_n@k of one problem exactly as ParEval's analysis/metrics.py computes it, for
    comparison with published tables. `runtimes` are those of the samples that PASSED (at the
    resource count n); failed samples are not in the list at all, and a problem with none is
    left out of the mean by the caller. `baseline_s` is the fastest BestSequential of those
    samples. Sorted ascending, runtime j gets weight nCr(j-1, k-1)/nCr(N, k), the probability
    that it is the SLOWEST of k drawn (so an expected worst of k, not best) -- except that
    upstream's nCr returns 1 when n < r, so the k-1 fastest samples also get weight 1/nCr(N, k)
    and for N = k the result is the SUM of the speedups. k = 1 is the plain mean over passing
    samples. Runtimes are floored at 1e-8 s like upstream."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ordered = sorted(runtimes)
    n = len(ordered)
    den = _upstream_ncr(n, k)
    return sum(
        _upstream_ncr(j - 1, k - 1) * baseline_s / (den * max(ordered[j - 1], 1e-8))
        for j in range(1, n + 1)
    )


def pareval_efficiency_at_k(
    runtimes: Sequence[float], baseline_s: float, resources: float, k: int
) -> float:
    """efficiency_n@k as ParEval computes it: speedup_n@k with each term divided by the
    resource count n (threads, ranks, ranks x threads), the same n for every sample."""
    if resources <= 0:
        raise ValueError(f"resources must be > 0, got {resources}")
    return pareval_speedup_at_k(runtimes, baseline_s, k) / resources
