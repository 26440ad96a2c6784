/* 2-D Jacobi driver: ITERS sweeps of the 5-point average on an N x N grid, boundary fixed.
 * MPI contract: block rows, no halo rows in the local array. */
#include "../harness.h"

#define N 512
#define ITERS 100
#define NN ((size_t)N * N)

static double *in_u;

static void gen_inputs(void) {
    hpck_rng r = {hpck_seed()};
    in_u = (double *)hpck_alloc(NN * sizeof(double));
    for (size_t i = 0; i < NN; ++i) in_u[i] = hpck_uniform(&r, 0, 1);
}

static double *uref, *uref_tmp;
static void ref_call(void) {
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

static int check(const double *uc, double *err, double *base_s) {
    uref = (double *)hpck_alloc(NN * sizeof(double));
    uref_tmp = (double *)hpck_alloc(NN * sizeof(double));
    *base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    *err = hpck_max_relerr(uc, uref, (long)NN);
    return *err <= 1e-10;
}

#if defined(HPCK_MPI)
void jacobi_mpi(int n, int iters, int row_off, int nrows_local, double *u_local, MPI_Comm comm);

static long off, cnt;
static double *ul;
static void cand_reset(void) { memcpy(ul, in_u + off * N, cnt * N * sizeof(double)); }
static void cand_call(void) { jacobi_mpi(N, ITERS, (int)off, (int)cnt, ul, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    hpck_mpi_init(&argc, &argv);
    MPI_Comm drv;
    MPI_Comm_dup(MPI_COMM_WORLD, &drv);
    gen_inputs();
    hpck_block(N, hpck_size, hpck_rank, &off, &cnt);
    ul = (double *)hpck_alloc(cnt * N * sizeof(double));
    double cand_s = hpck_mpi_best_of(hpck_reps(), cand_reset, cand_call, drv);
    int *counts = (int *)hpck_alloc(hpck_size * sizeof(int));
    int *displs = (int *)hpck_alloc(hpck_size * sizeof(int));
    for (int p = 0; p < hpck_size; ++p) {
        long o, c;
        hpck_block(N, hpck_size, p, &o, &c);
        counts[p] = (int)(c * N);
        displs[p] = (int)(o * N);
    }
    double *uall = (double *)hpck_alloc(NN * sizeof(double));
    MPI_Gatherv(ul, (int)(cnt * N), MPI_DOUBLE, uall, counts, displs, MPI_DOUBLE, 0, drv);
    int pass = 0;
    double base_s = 0, err = 0;
    if (hpck_rank == 0) pass = check(uall, &err, &base_s);
    hpck_mpi_finish(pass, cand_s, base_s, err, pass ? "" : "grid_mismatch");
}

#elif defined(__CUDACC__)
void jacobi_cuda(int n, int iters, double *d_u);

static double *du;
static void cand_reset(void) {
    HPCK_CUDA_OK(cudaMemcpy(du, in_u, NN * sizeof(double), cudaMemcpyHostToDevice));
}
static void cand_call(void) { jacobi_cuda(N, ITERS, du); }

int main(void) {
    gen_inputs();
    HPCK_CUDA_OK(cudaMalloc((void **)&du, NN * sizeof(double)));
    double cand_s = hpck_cuda_best_of(hpck_reps(), cand_reset, cand_call);
    double *uc = (double *)hpck_alloc(NN * sizeof(double));
    HPCK_CUDA_OK(cudaMemcpy(uc, du, NN * sizeof(double), cudaMemcpyDeviceToHost));
    double err, base_s;
    int pass = check(uc, &err, &base_s);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "grid_mismatch");
    hpck_exit();
}

#else
void jacobi(int n, int iters, double *u);

static double *uc;
static void cand_reset(void) { memcpy(uc, in_u, NN * sizeof(double)); }
static void cand_call(void) { jacobi(N, ITERS, uc); }

int main(void) {
    gen_inputs();
    uc = (double *)hpck_alloc(NN * sizeof(double));
    double cand_s = hpck_best_of(hpck_reps(), cand_reset, cand_call);
    double err, base_s;
    int pass = check(uc, &err, &base_s);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "grid_mismatch");
    hpck_exit();
}
#endif
