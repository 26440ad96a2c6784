/* AXPY, host side: inputs, reference and check. Never shown to the candidate. */
#include "hpck.h"

static double A, *px, *py, *yref;

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    bytes[0] = sizeof(axpy_params);
    bytes[1] = bytes[2] = (size_t)cnt * sizeof(double);
}

void hpck_generate(hpck_seed seed) {
    if (!px) {
        px = (double *)hpck_xalloc(N * sizeof(double));
        py = (double *)hpck_xalloc(N * sizeof(double));
        yref = (double *)hpck_xalloc(N * sizeof(double));
    }
    hpck_rng r = hpck_stream(seed, 0);
    A = hpck_uniform(&r, 0.5, 2.0);
    for (long i = 0; i < N; ++i) px[i] = hpck_uniform(&r, -1, 1);
    for (long i = 0; i < N; ++i) py[i] = hpck_uniform(&r, -1, 1);
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    axpy_params *p = (axpy_params *)buf[0];
    p->a = A;
    p->n = cnt;
    memcpy(buf[1], px + off, (size_t)cnt * sizeof(double));
    memcpy(buf[2], py + off, (size_t)cnt * sizeof(double));
}

void hpck_reference(void) {
    for (long i = 0; i < N; ++i) yref[i] = A * px[i] + py[i];
}

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    double worst = 0;
    for (int r = 0; r < nranks; ++r) {
        long off, cnt;
        hpck_rank_block(N, nranks, r, &off, &cnt);
        double e = hpck_max_relerr((const double *)bufs[r][2], yref + off, cnt);
        if (!(e <= worst)) worst = e;
    }
    *err = worst;
    if (worst <= 1e-12) return 1;
    snprintf(detail, dlen, "y_mismatch");
    return 0;
}
