#include <mpi.h>

/* threads find each rank's max, then the value is all-reduced and the smallest global index
 * holding it is min-reduced to rank 0 */
double max_loc_mpi(long n_local, const double *x_local, long *idx, MPI_Comm comm) {
    long off = 0;
    MPI_Exscan(&n_local, &off, 1, MPI_LONG, MPI_SUM, comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) off = 0; /* MPI_Exscan leaves rank 0's buffer undefined */
    double best = -1.0 / 0.0;
    long bi = -1;
#pragma omp parallel
    {
        double lb = -1.0 / 0.0;
        long li = -1;
#pragma omp for schedule(static) nowait
        for (long i = 0; i < n_local; ++i)
            if (x_local[i] > lb || (x_local[i] == lb && off + i < li)) {
                lb = x_local[i];
                li = off + i;
            }
#pragma omp critical
        if (li >= 0 && (lb > best || (lb == best && li < bi))) {
            best = lb;
            bi = li;
        }
    }
    double gbest;
    MPI_Allreduce(&best, &gbest, 1, MPI_DOUBLE, MPI_MAX, comm);
    long cand = (best == gbest && bi >= 0) ? bi : -1, gidx;
    if (cand < 0) cand = 0x7fffffffffffffffL;
    MPI_Reduce(&cand, &gidx, 1, MPI_LONG, MPI_MIN, 0, comm);
    *idx = gidx;
    return gbest;
}
