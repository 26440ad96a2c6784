/* hpc-kernels harness: what the trusted host (host_main.c), the guest runtime linked with the
 * candidate (guest_main.c) and every problem (problems/<name>/) share.
 *
 * Trust split (docs/suite-hpc-kernels.md, "Threat model"): the host never runs candidate
 * code. It generates each repetition's inputs from a secret seed, hands them to the candidate
 * process(es) through shared memory while they are stopped (SIGSTOP), times the repetition on
 * its own clock from SIGCONT to the last "done", stops them again, and checks the outputs
 * against its own reference. The guest only maps memory and calls the candidate.
 *
 * A problem is compiled for one family (HPCK_FAMILY_SHARED, _MPI or _CUDA) and one side
 * (HPCK_HOST or HPCK_GUEST). */
#ifndef HPCK_H
#define HPCK_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(HPCK_FAMILY_MPI) + defined(HPCK_FAMILY_CUDA) + defined(HPCK_FAMILY_SHARED) != 1
#error "define exactly one of HPCK_FAMILY_SHARED, HPCK_FAMILY_MPI, HPCK_FAMILY_CUDA"
#endif

#include "hpck_proto.h"

/* -- secret inputs (host only) -------------------------------------------------------------
 * Every repetition's inputs are a pure function of a fresh 128-bit secret seed, drawn by the
 * host and never given to a guest: value i of stream s is SipHash-2-4, keyed by the seed, of
 * the 7-byte little-endian counter s << 48 | i. A keyed PRF: no number of outputs lets a
 * candidate compute the key or predict another output, so nothing the host derives from the
 * inputs (where a maximum sits, a count, a sum) can be known without doing the work. The
 * earlier splitmix64 stream was invertible: two doubles of maxloc's x gave its seed away
 * (2048 guesses), and with it the planted maximum's index, at 25-270x "speedups". Streams are
 * independent: a problem draws secret choices (where to plant a tie) from a stream of their
 * own. */
#ifdef HPCK_HOST
#include "siphash.h" /* codegen_eval/harness_c: the host's include path only */

typedef struct {
    uint64_t k0, k1; /* the SipHash key: le64 of its first and second 8 bytes */
} hpck_seed;

typedef struct {
    uint64_t v0, v1, v2, v3; /* SipHash's state after the key schedule (done once) */
    uint64_t ctr;
} hpck_rng;

static inline hpck_rng hpck_stream(hpck_seed s, unsigned stream) {
    hpck_rng r = {0x736f6d6570736575ULL ^ s.k0, 0x646f72616e646f6dULL ^ s.k1,
                  0x6c7967656e657261ULL ^ s.k0, 0x7465646279746573ULL ^ s.k1,
                  (uint64_t)(stream & 0xff) << 48};
    return r;
}

/* codegen_siphash24(key, the 7 low bytes of m, 7), unrolled. Seven bytes, not eight: with no
 * full block, only the final block (the length in its top byte) is compressed, 6 rounds
 * rather than 8, and the host makes millions of these per repetition. */
static inline uint64_t hpck_prf(const hpck_rng *r, uint64_t m) {
    uint64_t v0 = r->v0, v1 = r->v1, v2 = r->v2, v3 = r->v3;
    const uint64_t b = (uint64_t)7 << 56 | (m & 0xffffffffffffffULL);
    CODEGEN_SIP_LAST(b);
    return v0 ^ v1 ^ v2 ^ v3;
}

static inline uint64_t hpck_next(hpck_rng *r) { return hpck_prf(r, r->ctr++); }

/* value i of the stream, in any order (the stream does not advance) */
static inline uint64_t hpck_at(const hpck_rng *r, uint64_t i) { return hpck_prf(r, r->ctr + i); }

/* uniform in [lo, hi) from 53 of the bits of u */
static inline double hpck_to_uniform(uint64_t u, double lo, double hi) {
    return lo + (hi - lo) * ((double)(u >> 11) * (1.0 / 9007199254740992.0));
}

static inline double hpck_uniform(hpck_rng *r, double lo, double hi) {
    return hpck_to_uniform(hpck_next(r), lo, hi);
}

static inline long hpck_randint(hpck_rng *r, long lo, long hi_excl) {
    return lo + (long)(hpck_next(r) % (uint64_t)(hi_excl - lo));
}
#endif

/* Contiguous block distribution of every MPI contract: the first n % p ranks get one more. */
static inline void hpck_block(long n, int size, int rank, long *off, long *cnt) {
    long q = n / size, r = n % size;
    *cnt = q + (rank < r ? 1 : 0);
    *off = rank * q + (rank < r ? rank : r);
}

/* The block of n elements that `rank` holds: the MPI block rule in the MPI family, all of
 * them (one rank) otherwise. */
static inline void hpck_rank_block(long n, int nranks, int rank, long *off, long *cnt) {
#ifdef HPCK_FAMILY_MPI
    hpck_block(n, nranks, rank, off, cnt);
#else
    (void)nranks, (void)rank;
    *off = 0, *cnt = n;
#endif
}

/* max over i of |c - r| / (1 + |r|); NaN anywhere gives +inf so a NaN never passes */
static inline double hpck_max_relerr(const double *c, const double *r, long n) {
    double worst = 0.0;
    for (long i = 0; i < n; ++i) {
        double e = fabs(c[i] - r[i]) / (1.0 + fabs(r[i]));
        if (!(e <= worst)) worst = (e == e) ? e : INFINITY;
    }
    return worst;
}

static inline void *hpck_xalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "hpck: out of memory\n");
        exit(70);
    }
    return p;
}

/* -- what every problem provides ----------------------------------------------------------
 * problems/<name>/problem.h (seen by both sides): its sizes, its params struct, and
 *   static const int hpck_nbuf;                    buffers in use, buffer 0 = params
 *   static const int hpck_buf_flags[HPCK_MAXBUF];  HPCK_PARAMS / IN / OUT / INOUT, | HOST
 * problems/<name>/reference.c (host only, never shown to the candidate): the functions below;
 * problems/<name>/call.c (guest only): hpck_call(). */
/* toolchain headers before problem.h, whose short size macros (N, G, ...) must not leak
 * into them */
#if defined(HPCK_GUEST) && defined(HPCK_FAMILY_MPI)
#include <mpi.h>
#endif
#if defined(HPCK_GUEST) && defined(HPCK_FAMILY_CUDA)
#include <cuda_runtime.h>
#endif
#include "problem.h"

#ifdef HPCK_HOST
/* Bytes of each buffer on `rank` of `nranks` (capacities: the largest any seed needs). */
void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]);
/* Generate the whole problem's pristine inputs from `seed` into the problem's own memory. */
void hpck_generate(hpck_seed seed);
/* Write `rank`'s share of the pristine inputs (and its params) into its buffers. */
void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]);
/* The reference result of the pristine inputs, into the problem's own memory (what the
 * outputs are checked against; the baseline's time comes from serial.c run as a guest). */
void hpck_reference(void);
/* Compare the candidate's outputs (every rank's buffers) with the reference: 1 = pass,
 * 0 = wrong, -1 = the host's own failure (e.g. its reference did not converge).
 * `err` gets the problem's error measure, `detail` a short reason. */
int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen);
#endif

#ifdef HPCK_GUEST
/* Call the candidate once with the rank's buffers (device pointers for CUDA buffers). */
void hpck_call(void *buf[HPCK_MAXBUF]);
#endif

#endif
