#include <mpi.h>

/* local inclusive scan, then add the sum of all lower ranks' blocks (MPI_Exscan) */
void prefix_sum_mpi(long n_local, const long long *x_local, long long *y_local, MPI_Comm comm) {
    long long s = 0, before = 0;
    for (long i = 0; i < n_local; ++i) y_local[i] = (s += x_local[i]);
    MPI_Exscan(&s, &before, 1, MPI_LONG_LONG, MPI_SUM, comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) before = 0; /* undefined on rank 0 */
    for (long i = 0; i < n_local; ++i) y_local[i] += before;
}
