/* SpMV, host side: inputs, reference and check. Never shown to the candidate.
 * MPI contract: rows (and x, y) are block-distributed; each rank gets the CSR arrays of its
 * own rows, row_ptr rebased to 0, col_idx global. The nonzeros per rank depend on the seed:
 * the layout reserves MAXNZ_ROW per row and the params carry the actual count. */
#include "hpck.h"

static int *in_rp, *in_ci;
static double *in_v, *in_x, *yref;

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    bytes[0] = sizeof(spmv_params);
    bytes[1] = (size_t)(cnt + 1) * sizeof(int);
    bytes[2] = (size_t)cnt * MAXNZ_ROW * sizeof(int);
    bytes[3] = (size_t)cnt * MAXNZ_ROW * sizeof(double);
    bytes[4] = bytes[5] = (size_t)cnt * sizeof(double);
}

void hpck_generate(hpck_seed seed) {
    if (!in_rp) {
        in_rp = (int *)hpck_xalloc((N + 1) * sizeof(int));
        in_ci = (int *)hpck_xalloc((size_t)N * MAXNZ_ROW * sizeof(int));
        in_v = (double *)hpck_xalloc((size_t)N * MAXNZ_ROW * sizeof(double));
        in_x = (double *)hpck_xalloc(N * sizeof(double));
        yref = (double *)hpck_xalloc(N * sizeof(double));
    }
    hpck_rng r = hpck_stream(seed, 0);
    int nnz = 0;
    for (int i = 0; i < N; ++i) {
        in_rp[i] = nnz;
        int k = (int)hpck_randint(&r, 3, MAXNZ_ROW + 1);
        for (int t = 0; t < k; ++t) {
            /* mostly near the diagonal, some far away: x must be fetched from other ranks */
            long c = (t % 3 == 0) ? hpck_randint(&r, 0, N) : i + hpck_randint(&r, -50, 51);
            in_ci[nnz] = (int)(c < 0 ? 0 : (c >= N ? N - 1 : c));
            in_v[nnz++] = hpck_uniform(&r, -1, 1);
        }
    }
    in_rp[N] = nnz;
    for (int i = 0; i < N; ++i) in_x[i] = hpck_uniform(&r, -1, 1);
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    int base = in_rp[off], *rp = (int *)buf[1];
    for (long i = 0; i <= cnt; ++i) rp[i] = in_rp[off + i] - base;
    spmv_params *p = (spmv_params *)buf[0];
    p->n = N;
    p->nrows = (int)cnt;
    p->nnz = rp[cnt];
    memcpy(buf[2], in_ci + base, (size_t)rp[cnt] * sizeof(int));
    memcpy(buf[3], in_v + base, (size_t)rp[cnt] * sizeof(double));
    memcpy(buf[4], in_x + off, (size_t)cnt * sizeof(double));
}

void hpck_reference(void) {
    for (int i = 0; i < N; ++i) {
        double s = 0.0;
        for (int k = in_rp[i]; k < in_rp[i + 1]; ++k) s += in_v[k] * in_x[in_ci[k]];
        yref[i] = s;
    }
}

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    double worst = 0;
    for (int r = 0; r < nranks; ++r) {
        long off, cnt;
        hpck_rank_block(N, nranks, r, &off, &cnt);
        double e = hpck_max_relerr((const double *)bufs[r][5], yref + off, cnt);
        if (!(e <= worst)) worst = e;
    }
    *err = worst;
    if (worst <= 1e-12) return 1;
    snprintf(detail, dlen, "y_mismatch");
    return 0;
}
