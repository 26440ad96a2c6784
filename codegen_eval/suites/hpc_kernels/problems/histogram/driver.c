/* Histogram driver: counts[b] = number of data[i] == b, data in [0, NBINS). The counts array
 * arrives filled with garbage: the candidate must set every bin.
 * MPI contract: data block-distributed; the complete counts are read on rank 0. */
#include "../harness.h"

#define N 4000000L
#define NBINS 256

static int *in_d;
static long long ref_counts[NBINS];

static void gen_inputs(void) {
    hpck_rng r = {hpck_seed()};
    in_d = (int *)hpck_alloc(N * sizeof(int));
    /* a quarter of the samples fall in one hot bin: contended updates must still be exact */
    int hot = (int)hpck_randint(&r, 0, NBINS);
    for (long i = 0; i < N; ++i)
        in_d[i] = (hpck_next(&r) & 3) == 0 ? hot : (int)hpck_randint(&r, 0, NBINS);
}

static void ref_call(void) {
    memset(ref_counts, 0, sizeof ref_counts);
    for (long i = 0; i < N; ++i) ref_counts[in_d[i]]++;
}

static int check(const long long *c, double *err, double *base_s) {
    *base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    int bad = 0;
    for (int b = 0; b < NBINS; ++b) bad += c[b] != ref_counts[b];
    *err = bad;
    return bad == 0;
}

static long long cand_counts[NBINS];

#if defined(HPCK_MPI)
void histogram_mpi(long n_local, const int *data_local, int nbins, long long *counts,
                   MPI_Comm comm);

static long off, cnt;
static int *dl;
static void cand_reset(void) {
    memcpy(dl, in_d + off, cnt * sizeof(int));
    memset(cand_counts, 0x5a, sizeof cand_counts);
}
static void cand_call(void) { histogram_mpi(cnt, dl, NBINS, cand_counts, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    hpck_mpi_init(&argc, &argv);
    MPI_Comm drv;
    MPI_Comm_dup(MPI_COMM_WORLD, &drv);
    gen_inputs();
    hpck_block(N, hpck_size, hpck_rank, &off, &cnt);
    dl = (int *)hpck_alloc(cnt * sizeof(int));
    double cand_s = hpck_mpi_best_of(hpck_reps(), cand_reset, cand_call, drv);
    int pass = 0;
    double base_s = 0, err = 0;
    if (hpck_rank == 0) pass = check(cand_counts, &err, &base_s);
    hpck_mpi_finish(pass, cand_s, base_s, err, pass ? "" : "counts_mismatch_on_rank0");
}

#elif defined(__CUDACC__)
void histogram_cuda(long n, const int *d_data, int nbins, long long *d_counts);

static int *dd;
static long long *dc;
static void cand_reset(void) {
    HPCK_CUDA_OK(cudaMemcpy(dd, in_d, N * sizeof(int), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemset(dc, 0x5a, NBINS * sizeof(long long)));
}
static void cand_call(void) { histogram_cuda(N, dd, NBINS, dc); }

int main(void) {
    gen_inputs();
    HPCK_CUDA_OK(cudaMalloc((void **)&dd, N * sizeof(int)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dc, NBINS * sizeof(long long)));
    double cand_s = hpck_cuda_best_of(hpck_reps(), cand_reset, cand_call);
    HPCK_CUDA_OK(cudaMemcpy(cand_counts, dc, sizeof cand_counts, cudaMemcpyDeviceToHost));
    double err, base_s;
    int pass = check(cand_counts, &err, &base_s);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "counts_mismatch");
    hpck_exit();
}

#else
void histogram(long n, const int *data, int nbins, long long *counts);

static int *dc;
static void cand_reset(void) {
    memcpy(dc, in_d, N * sizeof(int));
    memset(cand_counts, 0x5a, sizeof cand_counts);
}
static void cand_call(void) { histogram(N, dc, NBINS, cand_counts); }

int main(void) {
    gen_inputs();
    dc = (int *)hpck_alloc(N * sizeof(int));
    double cand_s = hpck_best_of(hpck_reps(), cand_reset, cand_call);
    double err, base_s;
    int pass = check(cand_counts, &err, &base_s);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "counts_mismatch");
    hpck_exit();
}
#endif
