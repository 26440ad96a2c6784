"""hpc-kernels against candidates that skip the work through the inputs, the tolerance or the
verdict's classes, rather than through the harness's processes (those are in
test_hpc_kernels_adversarial.py). Found by a red-team pass on 2026-11-27; on the commit before
the fixes every candidate here scored `pass`, and none may now.
"""

from __future__ import annotations

from codegen_eval.types import FailureClass, Score

from .hpck_helpers import sample_of, score

# Splitmix64, the generator the host used, is invertible: x[0] gives 53 bits of its first
# output, 2048 guesses the rest, x[1] confirms the state; replaying it tells where the host
# then planted maxloc's maximum (the early copy). No scan and no fallback: with inputs from a
# keyed PRF there is no state to recover, and the answer is wrong.
SEED_RECOVERY = r"""
#include <stdint.h>
#define G 0x9e3779b97f4a7c15ULL
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static uint64_t unshift(uint64_t y, int k) { uint64_t x = y; for (int i = 0; i < 64 / k + 1; ++i) x = y ^ (x >> k); return x; }
static uint64_t inverse(uint64_t a) { uint64_t x = a; for (int i = 0; i < 6; ++i) x *= 2 - a * x; return x; }
static uint64_t unmix(uint64_t z) {
    z = unshift(z, 31) * inverse(0x94d049bb133111ebULL);
    z = unshift(z, 27) * inverse(0xbf58476d1ce4e5b9ULL);
    return unshift(z, 30);
}
double max_loc(long n, const double *x, long *idx) {
    uint64_t m0 = (uint64_t)((x[0] + 1.0) * 4503599627370496.0);  /* x = -1 + m 2^-52 */
    uint64_t m1 = (uint64_t)((x[1] + 1.0) * 4503599627370496.0);
    for (uint64_t low = 0; low < 2048; ++low) {
        uint64_t s1 = unmix(m0 << 11 | low);
        if (mix(s1 + G) >> 11 != m1) continue;
        /* draws n+1 and n+2 chose the planted positions: the early one is the answer */
        *idx = (long)(mix(s1 - G + (uint64_t)(n + 1) * G) % (uint64_t)(n - 1));
        return x[*idx];
    }
    *idx = 0;
    return x[0];
}
"""


# The planted maximum was a constant outside the data's range: stop at the first value > 1.
ABOVE_ONE = r"""
double max_loc(long n, const double *x, long *idx) {
    for (long i = 0; i < n; ++i) if (x[i] > 1.0) { *idx = i; return x[i]; }
    double best = x[0]; long bi = 0;
    for (long i = 1; i < n; ++i) if (x[i] > best) { best = x[i]; bi = i; }
    *idx = bi;
    return best;
}
"""


async def _score(sample_id: str, code: str) -> Score:
    return await score(sample_id, code, 30.0)


async def test_inputs_give_no_generator_state_away() -> None:
    sc = await _score("maxloc/serial", SEED_RECOVERY)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER), sc.explanation


async def test_the_planted_maximum_is_an_ordinary_value() -> None:
    sc = await _score("maxloc/serial", ABOVE_ONE)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER), sc.explanation


async def test_cg_with_a_loosened_tolerance_fails() -> None:
    # honest CG ends at <= 1 tol (true residual); the check accepted 10 tol, and tol * 9.5
    # passed with ~12% fewer iterations
    target = sample_of("cg/serial").target
    loose = target.replace(
        "double stop = tol * tol * rs;", "tol *= 9.5;\n    double stop = tol * tol * rs;"
    )
    assert loose != target
    sc = await _score("cg/serial", loose)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER), sc.explanation
    assert "residual_too_large" in sc.explanation
