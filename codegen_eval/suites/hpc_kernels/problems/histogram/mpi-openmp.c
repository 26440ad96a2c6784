#include <mpi.h>
#include <stdlib.h>

/* threads build private histograms, merged per rank, then summed onto rank 0 */
void histogram_mpi(long n_local, const int *data_local, int nbins, long long *counts,
                   MPI_Comm comm) {
    long long *mine = calloc(nbins, sizeof(long long));
#pragma omp parallel
    {
        long long *priv = calloc(nbins, sizeof(long long));
#pragma omp for schedule(static) nowait
        for (long i = 0; i < n_local; ++i) priv[data_local[i]]++;
#pragma omp critical
        for (int b = 0; b < nbins; ++b) mine[b] += priv[b];
        free(priv);
    }
    MPI_Reduce(mine, counts, nbins, MPI_LONG_LONG, MPI_SUM, 0, comm);
    free(mine);
}
