#include <mpi.h>

/* local max; the value is all-reduced, then the smallest global index that holds it is
 * min-reduced to rank 0 (MPI_DOUBLE_INT would cap the index at INT_MAX) */
double max_loc_mpi(long n_local, const double *x_local, long *idx, MPI_Comm comm) {
    long off = 0;
    MPI_Exscan(&n_local, &off, 1, MPI_LONG, MPI_SUM, comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) off = 0; /* MPI_Exscan leaves rank 0's buffer undefined */
    double best = -1.0 / 0.0;
    long bi = -1;
    for (long i = 0; i < n_local; ++i)
        if (x_local[i] > best) {
            best = x_local[i];
            bi = off + i;
        }
    double gbest;
    MPI_Allreduce(&best, &gbest, 1, MPI_DOUBLE, MPI_MAX, comm);
    long cand = (best == gbest && bi >= 0) ? bi : -1, gidx;
    if (cand < 0) cand = 0x7fffffffffffffffL;
    MPI_Reduce(&cand, &gidx, 1, MPI_LONG, MPI_MIN, 0, comm);
    *idx = gidx;
    return gbest;
}
