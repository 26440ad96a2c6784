/* Max-with-index driver: the largest value and the SMALLEST index holding it. The maximum
 * is planted twice, far apart, so "any index of the max" fails the tie rule.
 * MPI contract: block distribution; the global answer is read on rank 0. */
#include "../harness.h"

#define N 4000000L

static double *in_x;
static double ref_val;
static long ref_idx;

static void gen_inputs(void) {
    hpck_rng r = {hpck_seed()};
    in_x = (double *)hpck_alloc(N * sizeof(double));
    for (long i = 0; i < N; ++i) in_x[i] = hpck_uniform(&r, -1, 1);
    long late = hpck_randint(&r, N / 2, N), early = hpck_randint(&r, 1, N / 4);
    in_x[late] = in_x[early] = 1.5;
}

static void ref_call(void) {
    double best = in_x[0];
    long bi = 0;
    for (long i = 1; i < N; ++i)
        if (in_x[i] > best) {
            best = in_x[i];
            bi = i;
        }
    ref_val = best;
    ref_idx = bi;
}

static int check(double v, long idx, double *base_s, char *detail) {
    *base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    int ok = (v == ref_val) && (idx == ref_idx);
    snprintf(detail, 96, "%s", ok ? "" : (v == ref_val ? "wrong_index" : "wrong_value"));
    return ok;
}

static double cand_val;
static long cand_idx;

#if defined(HPCK_MPI)
double max_loc_mpi(long n_local, const double *x_local, long *idx, MPI_Comm comm);

static long off, cnt;
static double *xl;
static void cand_reset(void) {
    memcpy(xl, in_x + off, cnt * sizeof(double));
    cand_idx = -1;
}
static void cand_call(void) { cand_val = max_loc_mpi(cnt, xl, &cand_idx, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    hpck_mpi_init(&argc, &argv);
    MPI_Comm drv;
    MPI_Comm_dup(MPI_COMM_WORLD, &drv);
    gen_inputs();
    hpck_block(N, hpck_size, hpck_rank, &off, &cnt);
    xl = (double *)hpck_alloc(cnt * sizeof(double));
    double cand_s = hpck_mpi_best_of(hpck_reps(), cand_reset, cand_call, drv);
    int pass = 0;
    double base_s = 0;
    char detail[96] = "";
    if (hpck_rank == 0) pass = check(cand_val, cand_idx, &base_s, detail);
    hpck_mpi_finish(pass, cand_s, base_s, pass ? 0 : 1, detail);
}

#elif defined(__CUDACC__)
double max_loc_cuda(long n, const double *d_x, long *idx);

static double *dx;
static void cand_reset(void) {
    HPCK_CUDA_OK(cudaMemcpy(dx, in_x, N * sizeof(double), cudaMemcpyHostToDevice));
    cand_idx = -1;
}
static void cand_call(void) { cand_val = max_loc_cuda(N, dx, &cand_idx); }

int main(void) {
    gen_inputs();
    HPCK_CUDA_OK(cudaMalloc((void **)&dx, N * sizeof(double)));
    double cand_s = hpck_cuda_best_of(hpck_reps(), cand_reset, cand_call);
    double base_s;
    char detail[96];
    int pass = check(cand_val, cand_idx, &base_s, detail);
    hpck_write_verdict(pass, cand_s, base_s, pass ? 0 : 1, detail);
    hpck_exit();
}

#else
double max_loc(long n, const double *x, long *idx);

static double *xc;
static void cand_reset(void) {
    memcpy(xc, in_x, N * sizeof(double));
    cand_idx = -1;
}
static void cand_call(void) { cand_val = max_loc(N, xc, &cand_idx); }

int main(void) {
    gen_inputs();
    xc = (double *)hpck_alloc(N * sizeof(double));
    double cand_s = hpck_best_of(hpck_reps(), cand_reset, cand_call);
    double base_s;
    char detail[96];
    int pass = check(cand_val, cand_idx, &base_s, detail);
    hpck_write_verdict(pass, cand_s, base_s, pass ? 0 : 1, detail);
    hpck_exit();
}
#endif
