/* 2-D Jacobi, host side: inputs, reference and check. Never shown to the candidate.
 * MPI contract: block rows, no halo rows in the local array. */
#include "hpck.h"

static double *in_u, *uref, *uref_tmp;

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    bytes[0] = sizeof(jacobi_params);
    bytes[1] = (size_t)cnt * N * sizeof(double);
}

void hpck_generate(hpck_seed seed) {
    if (!in_u) {
        in_u = (double *)hpck_xalloc(NN * sizeof(double));
        uref = (double *)hpck_xalloc(NN * sizeof(double));
        uref_tmp = (double *)hpck_xalloc(NN * sizeof(double));
    }
    hpck_rng r = hpck_stream(seed, 0);
    for (size_t i = 0; i < NN; ++i) in_u[i] = hpck_uniform(&r, 0, 1);
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    jacobi_params *p = (jacobi_params *)buf[0];
    p->n = N;
    p->iters = ITERS;
    p->row_off = (int)off;
    p->nrows = (int)cnt;
    memcpy(buf[1], in_u + (size_t)off * N, (size_t)cnt * N * sizeof(double));
}

/* two grids swapped after every sweep; the copies of the input are part of the baseline */
void hpck_reference(void) {
    memcpy(uref, in_u, NN * sizeof(double));
    memcpy(uref_tmp, in_u, NN * sizeof(double));
    double *a = uref, *b = uref_tmp;
    for (int t = 0; t < ITERS; ++t) {
        for (int i = 1; i < N - 1; ++i)
            for (int j = 1; j < N - 1; ++j)
                b[(size_t)i * N + j] = 0.25 * (a[(size_t)(i - 1) * N + j] + a[(size_t)(i + 1) * N + j] +
                                               a[(size_t)i * N + j - 1] + a[(size_t)i * N + j + 1]);
        double *s = a;
        a = b;
        b = s;
    }
    if (a != uref) memcpy(uref, a, NN * sizeof(double));
}

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    double worst = 0;
    for (int r = 0; r < nranks; ++r) {
        long off, cnt;
        hpck_rank_block(N, nranks, r, &off, &cnt);
        double e = hpck_max_relerr((const double *)bufs[r][1], uref + (size_t)off * N, cnt * N);
        if (!(e <= worst)) worst = e;
    }
    *err = worst;
    if (worst <= 1e-10) return 1;
    snprintf(detail, dlen, "grid_mismatch");
    return 0;
}
