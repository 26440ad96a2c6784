/* GEMV driver: y = A x, A row-major M x N. */
#include "../harness.h"

#define M 2000
#define NC 2000

static double *in_A, *in_x; /* every rank builds the full input from the seed */

static void gen_inputs(void) {
    hpck_rng r = {hpck_seed()};
    in_A = (double *)hpck_alloc((size_t)M * NC * sizeof(double));
    in_x = (double *)hpck_alloc((size_t)NC * sizeof(double));
    for (long i = 0; i < (long)M * NC; ++i) in_A[i] = hpck_uniform(&r, -1, 1);
    for (long j = 0; j < NC; ++j) in_x[j] = hpck_uniform(&r, -1, 1);
}

static double *yref;
static void ref_call(void) {
    for (int i = 0; i < M; ++i) {
        double s = 0.0;
        for (int j = 0; j < NC; ++j) s += in_A[(size_t)i * NC + j] * in_x[j];
        yref[i] = s;
    }
}

static double *Ac, *xc, *yc;
__attribute__((unused)) static void host_reset(void) {
    memcpy(Ac, in_A, (size_t)M * NC * sizeof(double));
    memcpy(xc, in_x, NC * sizeof(double));
    for (int i = 0; i < M; ++i) yc[i] = NAN; /* y arrives uninitialised: catch "y +=" bugs */
}

static int finish_check(const double *ycand, double *err) {
    yref = (double *)hpck_alloc(M * sizeof(double));
    ref_call();
    *err = hpck_max_relerr(ycand, yref, M);
    return *err <= 1e-10;
}

#if defined(HPCK_MPI)
void gemv_mpi(int m, int n, const double *A, const double *x, double *y, MPI_Comm comm);

static void cand_call(void) { gemv_mpi(M, NC, Ac, xc, yc, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    hpck_mpi_init(&argc, &argv);
    MPI_Comm drv;
    MPI_Comm_dup(MPI_COMM_WORLD, &drv);
    gen_inputs();
    Ac = (double *)hpck_alloc((size_t)M * NC * sizeof(double));
    xc = (double *)hpck_alloc(NC * sizeof(double));
    yc = (double *)hpck_alloc(M * sizeof(double));
    double cand_s = hpck_mpi_best_of(hpck_reps(), host_reset, cand_call, drv);
    int pass = 0;
    double base_s = 0, err = 0;
    if (hpck_rank == 0) { /* contract: the complete y on rank 0 */
        pass = finish_check(yc, &err);
        base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    }
    hpck_mpi_finish(pass, cand_s, base_s, err, pass ? "" : "y_mismatch_on_rank0");
}

#elif defined(__CUDACC__)
void gemv_cuda(int m, int n, const double *d_A, const double *d_x, double *d_y);

static double *dA, *dx, *dy;
static void cand_reset(void) {
    HPCK_CUDA_OK(cudaMemcpy(dA, in_A, (size_t)M * NC * sizeof(double), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemcpy(dx, in_x, NC * sizeof(double), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemset(dy, 0xff, M * sizeof(double))); /* NaN pattern */
}
static void cand_call(void) { gemv_cuda(M, NC, dA, dx, dy); }

int main(void) {
    gen_inputs();
    HPCK_CUDA_OK(cudaMalloc((void **)&dA, (size_t)M * NC * sizeof(double)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dx, NC * sizeof(double)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dy, M * sizeof(double)));
    double cand_s = hpck_cuda_best_of(hpck_reps(), cand_reset, cand_call);
    yc = (double *)hpck_alloc(M * sizeof(double));
    HPCK_CUDA_OK(cudaMemcpy(yc, dy, M * sizeof(double), cudaMemcpyDeviceToHost));
    double err;
    int pass = finish_check(yc, &err);
    double base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "y_mismatch");
    hpck_exit();
}

#else
void gemv(int m, int n, const double *A, const double *x, double *y);

static void cand_call(void) { gemv(M, NC, Ac, xc, yc); }

int main(void) {
    gen_inputs();
    Ac = (double *)hpck_alloc((size_t)M * NC * sizeof(double));
    xc = (double *)hpck_alloc(NC * sizeof(double));
    yc = (double *)hpck_alloc(M * sizeof(double));
    double cand_s = hpck_best_of(hpck_reps(), host_reset, cand_call);
    double err;
    int pass = finish_check(yc, &err);
    double base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "y_mismatch");
    hpck_exit();
}
#endif
