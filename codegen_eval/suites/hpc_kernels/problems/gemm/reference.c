/* GEMM, host side: inputs, reference and check. Never shown to the candidate.
 * MPI contract: only rank 0 holds A, B and C; the other ranks get zero-byte buffers, which
 * the guest passes as NULL. C is an OUT buffer, poisoned (NaN) by the host. */
#include "hpck.h"

static double *in_A, *in_B, *Cref;

/* 1 when `rank` holds the data: always outside MPI, rank 0 only under MPI */
static int holds_data(int rank) {
#ifdef HPCK_FAMILY_MPI
    return rank == 0;
#else
    (void)rank;
    return 1;
#endif
}

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    (void)nranks;
    bytes[0] = sizeof(gemm_params);
    bytes[1] = bytes[2] = bytes[3] = holds_data(rank) ? NN * sizeof(double) : 0;
}

void hpck_generate(hpck_seed seed) {
    if (!in_A) {
        in_A = (double *)hpck_xalloc(NN * sizeof(double));
        in_B = (double *)hpck_xalloc(NN * sizeof(double));
        Cref = (double *)hpck_xalloc(NN * sizeof(double));
    }
    hpck_rng r = hpck_stream(seed, 0);
    for (size_t i = 0; i < NN; ++i) in_A[i] = hpck_uniform(&r, -1, 1);
    for (size_t i = 0; i < NN; ++i) in_B[i] = hpck_uniform(&r, -1, 1);
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    (void)nranks;
    ((gemm_params *)buf[0])->n = N;
    if (!holds_data(rank)) return;
    memcpy(buf[1], in_A, NN * sizeof(double));
    memcpy(buf[2], in_B, NN * sizeof(double));
}

/* i-k-j loop order: the plain baseline */
void hpck_reference(void) {
    for (size_t i = 0; i < NN; ++i) Cref[i] = 0.0;
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < N; ++k) {
            double a = in_A[(size_t)i * N + k];
            for (int j = 0; j < N; ++j) Cref[(size_t)i * N + j] += a * in_B[(size_t)k * N + j];
        }
}

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    (void)nranks; /* the complete C on rank 0 */
    *err = hpck_max_relerr((const double *)bufs[0][3], Cref, (long)NN);
    if (*err <= 1e-10) return 1;
#ifdef HPCK_FAMILY_MPI
    snprintf(detail, dlen, "C_mismatch_on_rank0");
#else
    snprintf(detail, dlen, "C_mismatch");
#endif
    return 0;
}
