/* GEMM driver: C = A B, all N x N row-major. MPI contract: only rank 0 holds A, B and C. */
#include "../harness.h"

#define N 320
#define NN ((size_t)N * N)

static double *in_A, *in_B;

static void gen_inputs(void) {
    hpck_rng r = {hpck_seed()};
    in_A = (double *)hpck_alloc(NN * sizeof(double));
    in_B = (double *)hpck_alloc(NN * sizeof(double));
    for (size_t i = 0; i < NN; ++i) in_A[i] = hpck_uniform(&r, -1, 1);
    for (size_t i = 0; i < NN; ++i) in_B[i] = hpck_uniform(&r, -1, 1);
}

static double *Cref;
static void ref_call(void) {
    for (size_t i = 0; i < NN; ++i) Cref[i] = 0.0;
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < N; ++k) {
            double a = in_A[(size_t)i * N + k];
            for (int j = 0; j < N; ++j) Cref[(size_t)i * N + j] += a * in_B[(size_t)k * N + j];
        }
}

static int check(const double *Cc, double *err) {
    Cref = (double *)hpck_alloc(NN * sizeof(double));
    ref_call();
    *err = hpck_max_relerr(Cc, Cref, (long)NN);
    return *err <= 1e-10;
}

static double *Ac, *Bc, *Cc;
__attribute__((unused)) static void host_reset(void) {
    if (!Ac) return; /* MPI ranks other than 0 hold nothing */
    memcpy(Ac, in_A, NN * sizeof(double));
    memcpy(Bc, in_B, NN * sizeof(double));
    for (size_t i = 0; i < NN; ++i) Cc[i] = NAN;
}

#if defined(HPCK_MPI)
void gemm_mpi(int n, const double *A, const double *B, double *C, MPI_Comm comm);

static void cand_call(void) { gemm_mpi(N, Ac, Bc, Cc, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    hpck_mpi_init(&argc, &argv);
    MPI_Comm drv;
    MPI_Comm_dup(MPI_COMM_WORLD, &drv);
    if (hpck_rank == 0) {
        gen_inputs();
        Ac = (double *)hpck_alloc(NN * sizeof(double));
        Bc = (double *)hpck_alloc(NN * sizeof(double));
        Cc = (double *)hpck_alloc(NN * sizeof(double));
    }
    double cand_s = hpck_mpi_best_of(hpck_reps(), host_reset, cand_call, drv);
    int pass = 0;
    double base_s = 0, err = 0;
    if (hpck_rank == 0) {
        pass = check(Cc, &err);
        base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    }
    hpck_mpi_finish(pass, cand_s, base_s, err, pass ? "" : "C_mismatch_on_rank0");
}

#elif defined(__CUDACC__)
void gemm_cuda(int n, const double *d_A, const double *d_B, double *d_C);

static double *dA, *dB, *dC;
static void cand_reset(void) {
    HPCK_CUDA_OK(cudaMemcpy(dA, in_A, NN * sizeof(double), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemcpy(dB, in_B, NN * sizeof(double), cudaMemcpyHostToDevice));
    HPCK_CUDA_OK(cudaMemset(dC, 0xff, NN * sizeof(double)));
}
static void cand_call(void) { gemm_cuda(N, dA, dB, dC); }

int main(void) {
    gen_inputs();
    HPCK_CUDA_OK(cudaMalloc((void **)&dA, NN * sizeof(double)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dB, NN * sizeof(double)));
    HPCK_CUDA_OK(cudaMalloc((void **)&dC, NN * sizeof(double)));
    double cand_s = hpck_cuda_best_of(hpck_reps(), cand_reset, cand_call);
    Cc = (double *)hpck_alloc(NN * sizeof(double));
    HPCK_CUDA_OK(cudaMemcpy(Cc, dC, NN * sizeof(double), cudaMemcpyDeviceToHost));
    double err;
    int pass = check(Cc, &err);
    double base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "C_mismatch");
    hpck_exit();
}

#else
void gemm(int n, const double *A, const double *B, double *C);

static void cand_call(void) { gemm(N, Ac, Bc, Cc); }

int main(void) {
    gen_inputs();
    Ac = (double *)hpck_alloc(NN * sizeof(double));
    Bc = (double *)hpck_alloc(NN * sizeof(double));
    Cc = (double *)hpck_alloc(NN * sizeof(double));
    double cand_s = hpck_best_of(hpck_reps(), host_reset, cand_call);
    double err;
    int pass = check(Cc, &err);
    double base_s = hpck_best_of(hpck_reps(), NULL, ref_call);
    hpck_write_verdict(pass, cand_s, base_s, err, pass ? "" : "C_mismatch");
    hpck_exit();
}
#endif
