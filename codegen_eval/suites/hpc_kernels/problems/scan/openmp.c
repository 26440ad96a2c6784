#include <omp.h>
#include <stdlib.h>

/* two-pass blocked scan: each thread sums its static chunk, the chunk offsets are scanned
 * serially, then each thread scans its chunk starting from its offset */
void prefix_sum(long n, const long long *x, long long *y) {
    int nt = omp_get_max_threads();
    long long *part = calloc(nt + 1, sizeof(long long));
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        long lo = n * t / T, hi = n * (t + 1) / T;
        long long s = 0;
        for (long i = lo; i < hi; ++i) s += x[i];
        part[t + 1] = s;
#pragma omp barrier
#pragma omp single
        for (int k = 1; k <= T; ++k) part[k] += part[k - 1];
        s = part[t];
        for (long i = lo; i < hi; ++i) y[i] = (s += x[i]);
    }
    free(part);
}
