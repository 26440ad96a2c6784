/* Max with index, host side: inputs, reference and check. Never shown to the candidate.
 * The maximum occurs twice, so "any index of the max" fails the tie rule.
 * MPI contract: x block-distributed; every rank gets a result buffer, only rank 0's is read.
 * The result is poisoned by the host (value NaN, idx -1) before every repetition. */
#include "hpck.h"

static double *in_x, ref_val;
static long ref_idx;

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    bytes[0] = sizeof(maxloc_params);
    bytes[1] = (size_t)cnt * sizeof(double);
    bytes[2] = sizeof(maxloc_result);
}

/* Nothing may tell the maximum apart but comparing it with every other element (a red-team
 * pass, 2026-11-27, found both shortcuts this closes):
 * - the range is secret: x is uniform in [c - s, c + s) with a centre c in [-1, 1) and a
 *   half-width s in [2, 4) drawn per repetition. With a known upper end (x in [-1, 1)),
 *   "stop at the first value within 1e-6 of 1, else scan all" was right in 72% of
 *   repetitions (simulated), reading a quarter of x when it stopped early;
 * - the tie is a copy of the true maximum, an ordinary sample: a constant planted outside
 *   the range (1.5) was found by "stop at the first value > 1";
 * - where the copy goes (any index but the maximum's own) comes from a stream of its own. */
void hpck_generate(hpck_seed seed) {
    if (!in_x) in_x = (double *)hpck_xalloc(N * sizeof(double));
    hpck_rng r = hpck_stream(seed, 0), where = hpck_stream(seed, 1);
    double c = hpck_uniform(&r, -1, 1), s = hpck_uniform(&r, 2, 4);
    long top = 0;
    for (long i = 0; i < N; ++i) {
        in_x[i] = hpck_uniform(&r, c - s, c + s);
        if (in_x[i] > in_x[top]) top = i;
    }
    long copy = hpck_randint(&where, 0, N - 1);
    if (copy >= top) ++copy;
    in_x[copy] = in_x[top];
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    ((maxloc_params *)buf[0])->n = cnt;
    memcpy(buf[1], in_x + off, (size_t)cnt * sizeof(double));
}

void hpck_reference(void) {
    double best = in_x[0];
    long bi = 0;
    for (long i = 1; i < N; ++i)
        if (in_x[i] > best) {
            best = in_x[i];
            bi = i;
        }
    ref_val = best;
    ref_idx = bi;
}

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    (void)nranks; /* read on rank 0 only */
    const maxloc_result *res = (const maxloc_result *)bufs[0][2];
    double v = res->value;
    long idx = res->idx; /* the candidate's: only compared, never used to index anything */
    int ok = v == ref_val && idx >= 0 && idx < N && idx == ref_idx;
    *err = ok ? 0 : 1;
    if (!ok) snprintf(detail, dlen, "%s", v == ref_val ? "wrong_index" : "wrong_value");
    return ok;
}
