/* GEMV, host side: inputs, reference and check. Never shown to the candidate.
 * MPI contract: every rank holds all of A and x and a y of M elements; only rank 0's y is
 * judged. y is an OUT buffer, poisoned (NaN) by the host: "y +=" bugs fail. */
#include "hpck.h"

static double *in_A, *in_x, *yref;

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    (void)nranks, (void)rank;
    bytes[0] = sizeof(gemv_params);
    bytes[1] = (size_t)M * NC * sizeof(double);
    bytes[2] = (size_t)NC * sizeof(double);
    bytes[3] = (size_t)M * sizeof(double);
}

void hpck_generate(hpck_seed seed) {
    if (!in_A) {
        in_A = (double *)hpck_xalloc((size_t)M * NC * sizeof(double));
        in_x = (double *)hpck_xalloc((size_t)NC * sizeof(double));
        yref = (double *)hpck_xalloc((size_t)M * sizeof(double));
    }
    hpck_rng r = hpck_stream(seed, 0);
    for (long i = 0; i < (long)M * NC; ++i) in_A[i] = hpck_uniform(&r, -1, 1);
    for (long j = 0; j < NC; ++j) in_x[j] = hpck_uniform(&r, -1, 1);
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    (void)nranks, (void)rank;
    gemv_params *p = (gemv_params *)buf[0];
    p->m = M;
    p->n = NC;
    memcpy(buf[1], in_A, (size_t)M * NC * sizeof(double));
    memcpy(buf[2], in_x, (size_t)NC * sizeof(double));
}

void hpck_reference(void) {
    for (int i = 0; i < M; ++i) {
        double s = 0.0;
        for (int j = 0; j < NC; ++j) s += in_A[(size_t)i * NC + j] * in_x[j];
        yref[i] = s;
    }
}

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    (void)nranks; /* the complete y on rank 0; other ranks' y is ignored */
    *err = hpck_max_relerr((const double *)bufs[0][3], yref, M);
    if (*err <= 1e-10) return 1;
#ifdef HPCK_FAMILY_MPI
    snprintf(detail, dlen, "y_mismatch_on_rank0");
#else
    snprintf(detail, dlen, "y_mismatch");
#endif
    return 0;
}
