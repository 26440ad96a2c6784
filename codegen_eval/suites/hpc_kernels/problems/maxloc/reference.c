/* Max with index, host side: inputs, reference and check. Never shown to the candidate.
 * The maximum is planted twice, far apart, so "any index of the max" fails the tie rule.
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

void hpck_generate(hpck_seed seed) {
    if (!in_x) in_x = (double *)hpck_xalloc(N * sizeof(double));
    hpck_rng r = hpck_stream(seed, 0);
    for (long i = 0; i < N; ++i) in_x[i] = hpck_uniform(&r, -1, 1);
    /* both copies anywhere (a candidate that scans only part of x must not get lucky), the
     * early one strictly first */
    long early = hpck_randint(&r, 0, N - 1), late = hpck_randint(&r, early + 1, N);
    in_x[late] = in_x[early] = 1.5;
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
