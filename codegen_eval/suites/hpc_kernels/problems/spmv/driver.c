/* SpMV driver: y = A x with A square N x N in CSR (0-based). MPI contract: block rows. */
#include "../harness.h"

#define N 300000

static int *in_rp, *in_ci;
static double *in_v, *in_x;

static void gen_inputs(void) {
    hpck_rng r = {hpck_seed()};
    in_rp = (int *)hpck_alloc((N + 1) * sizeof(int));
    long cap = (long)N * 13;
    in_ci = (int *)hpck_alloc(cap * sizeof(int));
    in_v = (double *)hpck_alloc(cap * sizeof(double));
    in_x = (double *)hpck_alloc(N * sizeof(double));
    int nnz = 0;
    for (int i = 0; i < N; ++i) {
        in_rp[i] = nnz;
        int k = (int)hpck_randint(&r, 3, 14);
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

static double *yref;
static void ref_call(void) {
    for (int i = 0; i < N; ++i) {
        double s = 0.0;
        for (int k = in_rp[i]; k < in_rp[i + 1]; ++k) s += in_v[k] * in_x[in_ci[k]];
        yref[i] = s;
    }
}

static int check(const double *yc, double *err, double *base_s) {
    yref = (double *)hpck_alloc(N * sizeof(double));
    *base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    *err = hpck_max_relerr(yc, yref, N);
    return *err <= 1e-12;
}

#if defined(HPCK_MPI)
void spmv_mpi(int n, int nrows_local, const int *row_ptr, const int *col_idx,
              const double *vals, const double *x_local, double *y_local, MPI_Comm comm);

static long off, cnt;
static int *rp, *ci;
static double *v, *xl, *yl;
static void cand_reset(void) {
    int base = in_rp[off];
    for (long i = 0; i <= cnt; ++i) rp[i] = in_rp[off + i] - base;
    memcpy(ci, in_ci + base, rp[cnt] * sizeof(int));
    memcpy(v, in_v + base, rp[cnt] * sizeof(double));
    memcpy(xl, in_x + off, cnt * sizeof(double));
    for (long i = 0; i < cnt; ++i) yl[i] = NAN;
}
static void cand_call(void) { spmv_mpi(N, (int)cnt, rp, ci, v, xl, yl, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    hpck_mpi_init(&argc, &argv);
    MPI_Comm drv;
    MPI_Comm_dup(MPI_COMM_WORLD, &drv);
    gen_inputs();
    hpck_block(N, hpck_size, hpck_rank, &off, &cnt);
    long lnnz = in_rp[off + cnt] - in_rp[off];
    rp = (int *)hpck_alloc((cnt + 1) * sizeof(int));
    ci = (int *)hpck_alloc(lnnz * sizeof(int));
    v = (double *)hpck_alloc(lnnz * sizeof(double));
    xl = (double *)hpck_alloc(cnt * sizeof(double));
    yl = (double *)hpck_alloc(cnt * sizeof(double));
    double cand_s = hpck_mpi_best_of(hpck_reps(), cand_reset, cand_call, drv);
    int *counts = (int *)hpck_alloc(hpck_size * sizeof(int));
    int *displs = (int *)hpck_alloc(hpck_size * sizeof(int));
    for (int p = 0; p < hpck_size; ++p) {
        long o, c;
        hpck_block(N, hpck_size, p, &o, &c);
        counts[p] = (int)c;
        displs[p] = (int)o;
    }
    double *yall = (double *)hpck_alloc(N * sizeof(double));
    MPI_Gatherv(yl, (int)cnt, MPI_DOUBLE, yall, counts, displs, MPI_DOUBLE, 0, drv);
    int pass = 0;
    double base_s = 0, err = 0;
    if (hpck_rank == 0) pass = check(yall, &err, &base_s);
    hpck_mpi_finish(pass, cand_s, base_s, err, pass ? "" : "y_mismatch");
}

#elif defined(__CUDACC__)
void spmv_cuda(int n, const int *d_row_ptr, const int *d_col_idx, const double *d_vals,
               const double *d_x, double *d_y);

static int *drp, *dci;
static double *dv, *dx, *dy;
static void cand_reset(void) {
    int nnz = in_rp[N];
    HPCK_CUDA_OK(cudaMemcpy(drp, in_rp, (N + 1) * sizeof(int), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemcpy(dci, in_ci, nnz * sizeof(int), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemcpy(dv, in_v, nnz * sizeof(double), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemcpy(dx, in_x, N * sizeof(double), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemset(dy, 0xff, N * sizeof(double)));
}
static void cand_call(void) { spmv_cuda(N, drp, dci, dv, dx, dy); }

int main(void) {
    gen_inputs();
    int nnz = in_rp[N];
    HPCK_CUDA_OK(cudaMalloc((void **)&drp, (N + 1) * sizeof(int)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dci, nnz * sizeof(int)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dv, nnz * sizeof(double)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dx, N * sizeof(double)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dy, N * sizeof(double)));
    double cand_s = hpck_cuda_best_of(hpck_reps(), cand_reset, cand_call);
    double *yc = (double *)hpck_alloc(N * sizeof(double));
    HPCK_CUDA_OK(cudaMemcpy(yc, dy, N * sizeof(double), cudaMemcpyDeviceToHost));
    double err, base_s;
    int pass = check(yc, &err, &base_s);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "y_mismatch");
    hpck_exit();
}

#else
void spmv(int n, const int *row_ptr, const int *col_idx, const double *vals, const double *x,
          double *y);

static int *rp, *ci;
static double *v, *xc, *yc;
static void cand_reset(void) {
    memcpy(rp, in_rp, (N + 1) * sizeof(int));
    memcpy(ci, in_ci, in_rp[N] * sizeof(int));
    memcpy(v, in_v, in_rp[N] * sizeof(double));
    memcpy(xc, in_x, N * sizeof(double));
    for (int i = 0; i < N; ++i) yc[i] = NAN;
}
static void cand_call(void) { spmv(N, rp, ci, v, xc, yc); }

int main(void) {
    gen_inputs();
    rp = (int *)hpck_alloc((N + 1) * sizeof(int));
    ci = (int *)hpck_alloc(in_rp[N] * sizeof(int));
    v = (double *)hpck_alloc(in_rp[N] * sizeof(double));
    xc = (double *)hpck_alloc(N * sizeof(double));
    yc = (double *)hpck_alloc(N * sizeof(double));
    double cand_s = hpck_best_of(hpck_reps(), cand_reset, cand_call);
    double err, base_s;
    int pass = check(yc, &err, &base_s);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "y_mismatch");
    hpck_exit();
}
#endif
