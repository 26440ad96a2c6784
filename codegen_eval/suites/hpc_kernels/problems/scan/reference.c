/* Inclusive prefix sum, host side: inputs, reference and check. Never shown to the candidate.
 * MPI contract: x and y block-distributed; each rank's y holds the GLOBAL prefix sums of its
 * block. */
#include "hpck.h"

static long long *in_x, *yref;

void hpck_layout(int nranks, int rank, size_t bytes[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    bytes[0] = sizeof(scan_params);
    bytes[1] = bytes[2] = (size_t)cnt * sizeof(long long);
}

void hpck_generate(hpck_seed seed) {
    if (!in_x) {
        in_x = (long long *)hpck_xalloc(N * sizeof(long long));
        yref = (long long *)hpck_xalloc(N * sizeof(long long));
    }
    hpck_rng r = hpck_stream(seed, 0);
    /* uniform in [-1000, 1000]: two values from each PRF value, 32 bits each scaled to 2001
     * (multiply-shift; no value is off by more than 1 in 2^21 of its share) */
    for (long i = 0; i < N; i += 2) {
        uint64_t u = hpck_next(&r);
        in_x[i] = -1000 + (long long)(((u & 0xffffffffu) * 2001) >> 32);
        if (i + 1 < N) in_x[i + 1] = -1000 + (long long)(((u >> 32) * 2001) >> 32);
    }
}

void hpck_scatter(int nranks, int rank, void *buf[HPCK_MAXBUF]) {
    long off, cnt;
    hpck_rank_block(N, nranks, rank, &off, &cnt);
    ((scan_params *)buf[0])->n = cnt;
    memcpy(buf[1], in_x + off, (size_t)cnt * sizeof(long long));
    /* the host's all-ones poison reads -1 here, a value a prefix sum can take; 0x5a... is far
     * outside every sum of N values in [-1000, 1000], so an unwritten y never passes */
    memset(buf[2], 0x5a, (size_t)cnt * sizeof(long long));
}

void hpck_reference(void) {
    long long s = 0;
    for (long i = 0; i < N; ++i) yref[i] = (s += in_x[i]);
}

int hpck_check(int nranks, void *bufs[][HPCK_MAXBUF], double *err, char *detail, size_t dlen) {
    long bad = 0;
    for (int r = 0; r < nranks; ++r) {
        long off, cnt;
        hpck_rank_block(N, nranks, r, &off, &cnt);
        const long long *y = (const long long *)bufs[r][2];
        for (long i = 0; i < cnt; ++i) bad += y[i] != yref[off + i];
    }
    *err = (double)bad; /* elements that differ */
    if (bad == 0) return 1;
    snprintf(detail, dlen, "prefix_mismatch");
    return 0;
}
