/* Conjugate gradient, host side: inputs, reference and check. Never shown to the candidate.
 * Judged by the true relative residual of x. MPI contract: A and b replicated on every rank;
 * only rank 0's x is judged. The returned iteration count is not judged (any family). */
#include "hpck.h"

static int *in_rp, *in_ci;
static double *in_v, *in_b;
static double *rx, *rr_, *rp_, *rAp; /* the reference solver's vectors */

/* weight of the undirected edge {p, q}: symmetric because it is the value at the sorted
 * pair's index of the edge stream */
static double edge_w(const hpck_rng *edges, int p, int q) {
    uint64_t lo = (uint64_t)(p < q ? p : q), hi = (uint64_t)(p < q ? q : p);
    return hpck_to_uniform(hpck_at(edges, lo * N + hi), 0.5, 1.5);
}

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    (void)nranks, (void)rank;
    bytes[0] = sizeof(cg_params);
    bytes[1] = (N + 1) * sizeof(int);
    bytes[2] = NNZ * sizeof(int);
    bytes[3] = NNZ * sizeof(double);
    bytes[4] = bytes[5] = N * sizeof(double);
    bytes[6] = sizeof(int);
}

void hpck_generate(hpck_seed seed) {
    if (!in_rp) {
        in_rp = (int *)hpck_xalloc((N + 1) * sizeof(int));
        in_ci = (int *)hpck_xalloc(NNZ * sizeof(int));
        in_v = (double *)hpck_xalloc(NNZ * sizeof(double));
        in_b = (double *)hpck_xalloc(N * sizeof(double));
        rx = (double *)hpck_xalloc(N * sizeof(double));
        rr_ = (double *)hpck_xalloc(N * sizeof(double));
        rp_ = (double *)hpck_xalloc(N * sizeof(double));
        rAp = (double *)hpck_xalloc(N * sizeof(double));
    }
    hpck_rng r = hpck_stream(seed, 0), edges = hpck_stream(seed, 1);
    int nnz = 0;
    for (int i = 0; i < G; ++i)
        for (int j = 0; j < G; ++j) {
            int p = i * G + j, nb[4] = {p - G, p - 1, p + 1, p + G};
            int ok[4] = {i > 0, j > 0, j < G - 1, i < G - 1};
            in_rp[p] = nnz;
            double diag = 0.05;
            int dpos = -1;
            for (int k = 0; k < 4; ++k) {
                if (k == 2) dpos = nnz++; /* keep columns sorted: diagonal sits between */
                if (!ok[k]) continue;
                double w = edge_w(&edges, p, nb[k]);
                in_ci[nnz] = nb[k];
                in_v[nnz++] = -w;
                diag += w;
            }
            in_ci[dpos] = p;
            in_v[dpos] = diag;
        }
    in_rp[N] = nnz; /* == NNZ */
    for (int i = 0; i < N; ++i) in_b[i] = hpck_uniform(&r, -1, 1);
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    (void)nranks, (void)rank;
    cg_params *p = (cg_params *)buf[0];
    p->n = N;
    p->max_iter = MAXIT;
    p->tol = TOL;
    memcpy(buf[1], in_rp, (N + 1) * sizeof(int));
    memcpy(buf[2], in_ci, NNZ * sizeof(int));
    memcpy(buf[3], in_v, NNZ * sizeof(double));
    memcpy(buf[4], in_b, N * sizeof(double));
    memset(buf[5], 0, N * sizeof(double)); /* x = 0 on entry */
}

/* plain textbook CG, the baseline */
void hpck_reference(void) {
    double rs = 0, bb = 0;
    for (int i = 0; i < N; ++i) {
        rx[i] = 0;
        rr_[i] = rp_[i] = in_b[i];
        rs += in_b[i] * in_b[i];
    }
    bb = rs;
    for (int it = 0; it < MAXIT && rs > TOL * TOL * bb; ++it) {
        double pAp = 0;
        for (int i = 0; i < N; ++i) {
            double s = 0;
            for (int k = in_rp[i]; k < in_rp[i + 1]; ++k) s += in_v[k] * rp_[in_ci[k]];
            rAp[i] = s;
            pAp += rp_[i] * s;
        }
        double alpha = rs / pAp, rs2 = 0;
        for (int i = 0; i < N; ++i) {
            rx[i] += alpha * rp_[i];
            rr_[i] -= alpha * rAp[i];
            rs2 += rr_[i] * rr_[i];
        }
        for (int i = 0; i < N; ++i) rp_[i] = rr_[i] + (rs2 / rs) * rp_[i];
        rs = rs2;
    }
}

/* ||b - A x|| / ||b|| on the host's own copy of A and b; NaN gives +inf */
static double rel_residual(const double *x) {
    double rr = 0, bb = 0;
    for (int i = 0; i < N; ++i) {
        double s = in_b[i];
        for (int k = in_rp[i]; k < in_rp[i + 1]; ++k) s -= in_v[k] * x[in_ci[k]];
        rr += s * s;
        bb += in_b[i] * in_b[i];
    }
    double res = sqrt(rr / bb);
    return res == res ? res : INFINITY;
}

/* The true residual accepted: CG stops on its recurrence residual, which drifts a little
 * from the true one. Honest CG ends at <= 0.998 TOL here (serial and OpenMP references, 200
 * seeds); the earlier 10 TOL let `tol *= 9.5` pass with ~12% fewer iterations (a red-team
 * pass, 2026-11-27). At 2 TOL a loosened tol saves at most ~4% of the iterations. */
#define ACCEPT (2 * TOL)

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    (void)nranks; /* the complete x on rank 0 */
    if (rel_residual(rx) > ACCEPT) {
        snprintf(detail, dlen, "reference_cg_did_not_converge"); /* our failure, not theirs */
        return -1;
    }
    *err = rel_residual((const double *)bufs[0][5]);
    if (*err <= ACCEPT) return 1;
#ifdef HPCK_FAMILY_MPI
    snprintf(detail, dlen, "residual_too_large_on_rank0");
#else
    snprintf(detail, dlen, "residual_too_large");
#endif
    return 0;
}
