/* AXPY driver: y = a*x + y. Builds as plain C (serial, OpenMP), with -DHPCK_MPI, or as CUDA. */
#include "../harness.h"

#define N 2000000L

static double A_COEF;
static double *in_x, *in_y; /* pristine inputs, regenerated from the seed */

static void gen_inputs(void) {
    hpck_rng r = {hpck_seed()};
    in_x = (double *)hpck_alloc(N * sizeof(double));
    in_y = (double *)hpck_alloc(N * sizeof(double));
    A_COEF = hpck_uniform(&r, 0.5, 2.0);
    for (long i = 0; i < N; ++i) in_x[i] = hpck_uniform(&r, -1, 1);
    for (long i = 0; i < N; ++i) in_y[i] = hpck_uniform(&r, -1, 1);
}

static double *yref;
static void ref_reset(void) { memcpy(yref, in_y, N * sizeof(double)); }
static void ref_call(void) {
    for (long i = 0; i < N; ++i) yref[i] = A_COEF * in_x[i] + yref[i];
}

#if defined(HPCK_MPI)
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm);

static long off, cnt;
static double *xl, *yl;
static void cand_reset(void) {
    memcpy(xl, in_x + off, cnt * sizeof(double));
    memcpy(yl, in_y + off, cnt * sizeof(double));
}
static void cand_call(void) { axpy_mpi(cnt, A_COEF, xl, yl, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    hpck_mpi_init(&argc, &argv);
    MPI_Comm drv;
    MPI_Comm_dup(MPI_COMM_WORLD, &drv);
    gen_inputs();
    hpck_block(N, hpck_size, hpck_rank, &off, &cnt);
    xl = (double *)hpck_alloc(cnt * sizeof(double));
    yl = (double *)hpck_alloc(cnt * sizeof(double));
    double cand_s = hpck_mpi_best_of(hpck_reps(), cand_reset, cand_call, drv);
    /* the driver gathers the distributed result itself, outside the timed region */
    int *counts = NULL, *displs = NULL;
    double *yall = NULL;
    if (hpck_rank == 0) {
        counts = (int *)hpck_alloc(hpck_size * sizeof(int));
        displs = (int *)hpck_alloc(hpck_size * sizeof(int));
        yall = (double *)hpck_alloc(N * sizeof(double));
        for (int p = 0; p < hpck_size; ++p) {
            long o, c;
            hpck_block(N, hpck_size, p, &o, &c);
            counts[p] = (int)c;
            displs[p] = (int)o;
        }
    }
    MPI_Gatherv(yl, (int)cnt, MPI_DOUBLE, yall, counts, displs, MPI_DOUBLE, 0, drv);
    int pass = 0;
    double base_s = 0, err = 0;
    if (hpck_rank == 0) {
        yref = (double *)hpck_alloc(N * sizeof(double));
        base_s = hpck_best_of(hpck_reps(), ref_reset, ref_call);
        err = hpck_max_relerr(yall, yref, N);
        pass = err <= 1e-12;
    }
    hpck_mpi_finish(pass, cand_s, base_s, err, pass ? "" : "y_mismatch");
}

#elif defined(__CUDACC__)
void axpy_cuda(long n, double a, const double *d_x, double *d_y);

static double *dx, *dy;
static void cand_reset(void) {
    HPCK_CUDA_OK(cudaMemcpy(dx, in_x, N * sizeof(double), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemcpy(dy, in_y, N * sizeof(double), cudaMemcpyHostToDevice));
}
static void cand_call(void) { axpy_cuda(N, A_COEF, dx, dy); }

int main(void) {
    gen_inputs();
    HPCK_CUDA_OK(cudaMalloc((void **)&dx, N * sizeof(double)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dy, N * sizeof(double)));
    double cand_s = hpck_cuda_best_of(hpck_reps(), cand_reset, cand_call);
    double *yc = (double *)hpck_alloc(N * sizeof(double));
    HPCK_CUDA_OK(cudaMemcpy(yc, dy, N * sizeof(double), cudaMemcpyDeviceToHost));
    yref = (double *)hpck_alloc(N * sizeof(double));
    double base_s = hpck_best_of(hpck_reps(), ref_reset, ref_call);
    double err = hpck_max_relerr(yc, yref, N);
    hpck_write_verdict(err <= 1e-12, cand_s, base_s, err, err <= 1e-12 ? "" : "y_mismatch");
    hpck_exit();
}

#else
void axpy(long n, double a, const double *x, double *y);

static double *xc, *yc;
static void cand_reset(void) {
    memcpy(xc, in_x, N * sizeof(double));
    memcpy(yc, in_y, N * sizeof(double));
}
static void cand_call(void) { axpy(N, A_COEF, xc, yc); }

int main(void) {
    gen_inputs();
    xc = (double *)hpck_alloc(N * sizeof(double));
    yc = (double *)hpck_alloc(N * sizeof(double));
    double cand_s = hpck_best_of(hpck_reps(), cand_reset, cand_call);
    yref = (double *)hpck_alloc(N * sizeof(double));
    double base_s = hpck_best_of(hpck_reps(), ref_reset, ref_call);
    double err = hpck_max_relerr(yc, yref, N);
    hpck_write_verdict(err <= 1e-12, cand_s, base_s, err, err <= 1e-12 ? "" : "y_mismatch");
    hpck_exit();
}
#endif
