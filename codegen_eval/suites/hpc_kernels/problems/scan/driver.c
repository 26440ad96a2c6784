/* Inclusive prefix sum of 64-bit integers (exact comparison).
 * MPI contract: block distribution; each rank gets the global prefix for its own block. */
#include "../harness.h"

#define N 4000000L

static long long *in_x, *yref;

static void gen_inputs(void) {
    hpck_rng r = {hpck_seed()};
    in_x = (long long *)hpck_alloc(N * sizeof(long long));
    for (long i = 0; i < N; ++i) in_x[i] = hpck_randint(&r, -1000, 1001);
}

static void ref_call(void) {
    long long s = 0;
    for (long i = 0; i < N; ++i) yref[i] = (s += in_x[i]);
}

static int check(const long long *yc, double *err, double *base_s) {
    yref = (long long *)hpck_alloc(N * sizeof(long long));
    *base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    long bad = 0;
    for (long i = 0; i < N; ++i) bad += yc[i] != yref[i];
    *err = (double)bad;
    return bad == 0;
}

#if defined(HPCK_MPI)
void prefix_sum_mpi(long n_local, const long long *x_local, long long *y_local, MPI_Comm comm);

static long off, cnt;
static long long *xl, *yl;
static void cand_reset(void) {
    memcpy(xl, in_x + off, cnt * sizeof(long long));
    memset(yl, 0x5a, cnt * sizeof(long long));
}
static void cand_call(void) { prefix_sum_mpi(cnt, xl, yl, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    hpck_mpi_init(&argc, &argv);
    MPI_Comm drv;
    MPI_Comm_dup(MPI_COMM_WORLD, &drv);
    gen_inputs();
    hpck_block(N, hpck_size, hpck_rank, &off, &cnt);
    xl = (long long *)hpck_alloc(cnt * sizeof(long long));
    yl = (long long *)hpck_alloc(cnt * sizeof(long long));
    double cand_s = hpck_mpi_best_of(hpck_reps(), cand_reset, cand_call, drv);
    int *counts = (int *)hpck_alloc(hpck_size * sizeof(int));
    int *displs = (int *)hpck_alloc(hpck_size * sizeof(int));
    for (int p = 0; p < hpck_size; ++p) {
        long o, c;
        hpck_block(N, hpck_size, p, &o, &c);
        counts[p] = (int)c;
        displs[p] = (int)o;
    }
    long long *yall = (long long *)hpck_alloc(N * sizeof(long long));
    MPI_Gatherv(yl, (int)cnt, MPI_LONG_LONG, yall, counts, displs, MPI_LONG_LONG, 0, drv);
    int pass = 0;
    double base_s = 0, err = 0;
    if (hpck_rank == 0) pass = check(yall, &err, &base_s);
    hpck_mpi_finish(pass, cand_s, base_s, err, pass ? "" : "prefix_mismatch");
}

#elif defined(__CUDACC__)
void prefix_sum_cuda(long n, const long long *d_x, long long *d_y);

static long long *dx, *dy;
static void cand_reset(void) {
    HPCK_CUDA_OK(cudaMemcpy(dx, in_x, N * sizeof(long long), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemset(dy, 0x5a, N * sizeof(long long)));
}
static void cand_call(void) { prefix_sum_cuda(N, dx, dy); }

int main(void) {
    gen_inputs();
    HPCK_CUDA_OK(cudaMalloc((void **)&dx, N * sizeof(long long)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dy, N * sizeof(long long)));
    double cand_s = hpck_cuda_best_of(hpck_reps(), cand_reset, cand_call);
    long long *yc = (long long *)hpck_alloc(N * sizeof(long long));
    HPCK_CUDA_OK(cudaMemcpy(yc, dy, N * sizeof(long long), cudaMemcpyDeviceToHost));
    double err, base_s;
    int pass = check(yc, &err, &base_s);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "prefix_mismatch");
    hpck_exit();
}

#else
void prefix_sum(long n, const long long *x, long long *y);

static long long *xc, *yc;
static void cand_reset(void) {
    memcpy(xc, in_x, N * sizeof(long long));
    memset(yc, 0x5a, N * sizeof(long long));
}
static void cand_call(void) { prefix_sum(N, xc, yc); }

int main(void) {
    gen_inputs();
    xc = (long long *)hpck_alloc(N * sizeof(long long));
    yc = (long long *)hpck_alloc(N * sizeof(long long));
    double cand_s = hpck_best_of(hpck_reps(), cand_reset, cand_call);
    double err, base_s;
    int pass = check(yc, &err, &base_s);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "prefix_mismatch");
    hpck_exit();
}
#endif
