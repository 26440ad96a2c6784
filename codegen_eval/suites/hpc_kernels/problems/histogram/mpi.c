#include <mpi.h>
#include <stdlib.h>

/* local histogram of the rank's block, summed onto rank 0 */
void histogram_mpi(long n_local, const int *data_local, int nbins, long long *counts,
                   MPI_Comm comm) {
    long long *mine = calloc(nbins, sizeof(long long));
    for (long i = 0; i < n_local; ++i) mine[data_local[i]]++;
    MPI_Reduce(mine, counts, nbins, MPI_LONG_LONG, MPI_SUM, 0, comm);
    free(mine);
}
