#include <stdlib.h>

/* private histograms per thread, merged once: no atomics in the hot loop */
void histogram(long n, const int *data, int nbins, long long *counts) {
    for (int b = 0; b < nbins; ++b) counts[b] = 0;
#pragma omp parallel
    {
        long long *mine = calloc(nbins, sizeof(long long));
#pragma omp for schedule(static) nowait
        for (long i = 0; i < n; ++i) mine[data[i]]++;
#pragma omp critical
        for (int b = 0; b < nbins; ++b) counts[b] += mine[b];
        free(mine);
    }
}
