/* hpc-kernels driver harness: shared by every problem driver (C11 and, for CUDA, C++).
 *
 * Trust model (see docs/suite-hpc-kernels.md): the candidate is linked into this process, so
 * nothing it prints is believed. The scorer passes a random nonce in HPCK_NONCE; a constructor
 * that runs before main (priority 101, the first slot open to programs) copies it into a
 * static buffer and wipes it from the environment. At the end rank 0 writes the verdict to
 * "hpck-<nonce>.res" together with a keyed checksum over the payload, then leaves with _exit
 * so no candidate atexit handler or destructor runs after the verdict exists. The reference
 * is recomputed from the seed after the candidate ran, on buffers the candidate never saw. */
#ifndef HPCK_HARNESS_H
#define HPCK_HARNESS_H
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HPCK_MPI
#include <mpi.h>
#endif

extern char **environ;

static char hpck_nonce[80];

/* Runs before main and before the candidate's own (default-priority) constructors. */
__attribute__((constructor(101))) static void hpck_capture_nonce(void) {
    const char *v = getenv("HPCK_NONCE");
    if (v) {
        strncpy(hpck_nonce, v, sizeof hpck_nonce - 1);
        /* overwrite the bytes in place: /proc/self/environ shows the original block */
        for (char **e = environ; *e; ++e)
            if (strncmp(*e, "HPCK_NONCE=", 11) == 0) memset(*e + 11, 'x', strlen(*e + 11));
        unsetenv("HPCK_NONCE");
    }
}

static inline void hpck_die(const char *msg) {
    fprintf(stderr, "hpck driver error: %s\n", msg);
    fflush(stderr);
    _exit(3);
}

static inline void *hpck_alloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) hpck_die("out of memory");
    return p;
}

/* splitmix64: tiny, seedable and identical on every rank, so each rank can rebuild the
 * global input from the seed and take its own block without any communication. */
typedef struct {
    uint64_t s;
} hpck_rng;

static inline uint64_t hpck_next(hpck_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static inline double hpck_uniform(hpck_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)(hpck_next(r) >> 11) * (1.0 / 9007199254740992.0));
}

static inline long hpck_randint(hpck_rng *r, long lo, long hi_excl) {
    return lo + (long)(hpck_next(r) % (uint64_t)(hi_excl - lo));
}

static inline uint64_t hpck_env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    return (v && *v) ? strtoull(v, NULL, 10) : dflt;
}

static inline uint64_t hpck_seed(void) { return hpck_env_u64("HPCK_SEED", 12345); }
static inline int hpck_reps(void) {
    int r = (int)hpck_env_u64("HPCK_REPS", 3);
    return r < 1 ? 1 : r;
}

static inline double hpck_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Contiguous block distribution used by every MPI contract: the first n % p ranks get one
 * extra element. */
static inline void hpck_block(long n, int size, int rank, long *off, long *cnt) {
    long q = n / size, r = n % size;
    *cnt = q + (rank < r ? 1 : 0);
    *off = rank * q + (rank < r ? rank : r);
}

/* max over i of |c - r| / (1 + |r|); NaN anywhere gives +inf so a NaN can never pass */
static inline double hpck_max_relerr(const double *c, const double *r, long n) {
    double worst = 0.0;
    for (long i = 0; i < n; ++i) {
        double e = fabs(c[i] - r[i]) / (1.0 + fabs(r[i]));
        if (!(e <= worst)) worst = (e == e) ? e : INFINITY;
    }
    return worst;
}

/* FNV-1a 64 over nonce|payload. Not cryptographic: the point is that the key (the nonce)
 * is gone from the environment before candidate code runs, so a forged file is detectable. */
static inline uint64_t hpck_mac(const char *payload) {
    uint64_t h = 0xcbf29ce484222325ULL;
    const char *parts[3] = {hpck_nonce, "|", payload};
    for (int k = 0; k < 3; ++k)
        for (const unsigned char *p = (const unsigned char *)parts[k]; *p; ++p) {
            h ^= *p;
            h *= 0x100000001b3ULL;
        }
    return h;
}

/* Write the verdict file; called once, by rank 0 only. */
static inline void hpck_write_verdict(int pass, double cand_s, double base_s, double err,
                               const char *detail) {
    char payload[512], path[128];
    if (!hpck_nonce[0]) hpck_die("no HPCK_NONCE given");
    snprintf(payload, sizeof payload, "v=1 pass=%d cand_s=%.9g base_s=%.9g err=%.6g detail=%s",
             pass, cand_s, base_s, err, detail && *detail ? detail : "-");
    snprintf(path, sizeof path, "hpck-%s.res", hpck_nonce);
    FILE *f = fopen(path, "w");
    if (!f) hpck_die("cannot write verdict file");
    fprintf(f, "%s\nmac=%016llx\n", payload, (unsigned long long)hpck_mac(payload));
    if (fclose(f) != 0) hpck_die("cannot close verdict file");
}

/* Leave without running atexit handlers or destructors (the candidate's included). */
static inline void hpck_exit(void) {
    fflush(stdout);
    fflush(stderr);
    _exit(0);
}

typedef void (*hpck_fn)(void);

/* best-of-reps wall time of call(), each rep after reset() (untimed) */
static inline double hpck_best_of(int reps, hpck_fn reset, hpck_fn call) {
    double best = INFINITY;
    for (int k = 0; k < reps; ++k) {
        if (reset) reset();
        double t0 = hpck_now();
        call();
        double t = hpck_now() - t0;
        if (t < best) best = t;
    }
    return best;
}

#ifdef HPCK_MPI
static int hpck_rank, hpck_size;

static inline void hpck_mpi_init(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &hpck_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &hpck_size);
}

/* Collective: every rank resets, a barrier lines them up, and a rep lasts until a second
 * barrier shows every rank done (the makespan: with more ranks than cores a rank's own clock
 * would hide the time it waited for a core); best over reps. The driver uses its own
 * duplicate of the communicator so a candidate's stray messages on MPI_COMM_WORLD cannot
 * match the driver's collectives. */
static inline double hpck_mpi_best_of(int reps, hpck_fn reset, hpck_fn call, MPI_Comm drv) {
    double best = INFINITY;
    for (int k = 0; k < reps; ++k) {
        if (reset) reset();
        MPI_Barrier(drv);
        double t0 = MPI_Wtime();
        call();
        MPI_Barrier(drv);
        double t = MPI_Wtime() - t0, tmax = 0.0;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, drv);
        if (tmax < best) best = tmax;
    }
    return best;
}

/* rank 0 writes the verdict after MPI_Finalize; all ranks leave through _exit */
static inline void hpck_mpi_finish(int pass, double cand_s, double base_s, double err,
                            const char *detail) {
    MPI_Finalize();
    if (hpck_rank == 0) hpck_write_verdict(pass, cand_s, base_s, err, detail);
    hpck_exit();
}
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>
#define HPCK_CUDA_OK(call)                                                         \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            fprintf(stderr, "hpck driver: %s: %s\n", #call, cudaGetErrorString(e_)); \
            _exit(4);                                                              \
        }                                                                          \
    } while (0)

/* The candidate launches kernels asynchronously: synchronise inside the timed region and
 * report a kernel fault as a driver-detected failure (exit 5), not as a wrong answer. */
static inline double hpck_cuda_best_of(int reps, hpck_fn reset, hpck_fn call) {
    double best = INFINITY;
    for (int k = 0; k < reps; ++k) {
        if (reset) reset();
        HPCK_CUDA_OK(cudaDeviceSynchronize());
        double t0 = hpck_now();
        call();
        cudaError_t e = cudaDeviceSynchronize();
        if (e == cudaSuccess) e = cudaGetLastError();
        if (e != cudaSuccess) {
            fprintf(stderr, "hpck driver: candidate kernel failed: %s\n", cudaGetErrorString(e));
            _exit(5);
        }
        double t = hpck_now() - t0;
        if (t < best) best = t;
    }
    return best;
}
#endif

#endif
