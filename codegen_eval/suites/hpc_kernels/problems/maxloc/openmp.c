#include <omp.h>

/* per-thread scan of a static chunk, then merge: larger value wins, ties go to the lower
 * index, which keeps the "first occurrence" rule */
double max_loc(long n, const double *x, long *idx) {
    double best = x[0];
    long bi = 0;
#pragma omp parallel
    {
        double lb = x[0];
        long li = 0;
#pragma omp for schedule(static) nowait
        for (long i = 0; i < n; ++i)
            if (x[i] > lb || (x[i] == lb && i < li)) {
                lb = x[i];
                li = i;
            }
#pragma omp critical
        if (lb > best || (lb == best && li < bi)) {
            best = lb;
            bi = li;
        }
    }
    *idx = bi;
    return best;
}
