/* Histogram, host side: inputs, reference and check. Never shown to the candidate.
 * MPI contract: data block-distributed; every rank passes a counts buffer of NBINS elements,
 * only rank 0's is judged. */
#include "hpck.h"

_Static_assert(NBINS == 256, "the generator takes a bin from 8 bits");

static int *in_d;
static long long ref_counts[NBINS];

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    bytes[0] = sizeof(histogram_params);
    bytes[1] = (size_t)cnt * sizeof(int);
    bytes[2] = NBINS * sizeof(long long);
}

void hpck_generate(hpck_seed seed) {
    if (!in_d) in_d = (int *)hpck_xalloc(N * sizeof(int));
    hpck_rng r = hpck_stream(seed, 0);
    /* a quarter of the samples fall in one hot bin: contended updates must still be exact */
    int hot = (int)hpck_randint(&r, 0, NBINS);
    /* 10 bits a sample (2: hot or not, 8: the bin), six samples from each PRF value: the PRF
     * costs ~10 ns a call and the host generates N samples per repetition */
    uint64_t u = 0;
    for (long i = 0; i < N; ++i) {
        if (i % 6 == 0) u = hpck_next(&r);
        in_d[i] = (u & 3) == 0 ? hot : (int)((u >> 2) & (NBINS - 1));
        u >>= 10;
    }
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    histogram_params *p = (histogram_params *)buf[0];
    p->n = cnt;
    p->nbins = NBINS;
    memcpy(buf[1], in_d + off, (size_t)cnt * sizeof(int));
}

void hpck_reference(void) {
    memset(ref_counts, 0, sizeof ref_counts);
    for (long i = 0; i < N; ++i) ref_counts[in_d[i]]++;
}

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    (void)nranks; /* the complete histogram on rank 0 */
    const long long *c = (const long long *)bufs[0][2];
    int bad = 0;
    for (int b = 0; b < NBINS; ++b) bad += c[b] != ref_counts[b];
    *err = bad; /* bins that differ */
    if (bad == 0) return 1;
#ifdef HPCK_FAMILY_MPI
    snprintf(detail, dlen, "counts_mismatch_on_rank0");
#else
    snprintf(detail, dlen, "counts_mismatch");
#endif
    return 0;
}
