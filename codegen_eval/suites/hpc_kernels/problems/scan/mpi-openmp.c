#include <mpi.h>
#include <omp.h>
#include <stdlib.h>

/* threads scan the rank's block in two passes, MPI_Exscan supplies the rank's offset */
void prefix_sum_mpi(long n_local, const long long *x_local, long long *y_local, MPI_Comm comm) {
    int nt = omp_get_max_threads();
    long long *part = calloc(nt + 1, sizeof(long long));
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        long lo = n_local * t / T, hi = n_local * (t + 1) / T;
        long long s = 0;
        for (long i = lo; i < hi; ++i) s += x_local[i];
        part[t + 1] = s;
    }
    for (int k = 1; k <= nt; ++k) part[k] += part[k - 1];
    long long before = 0;
    MPI_Exscan(&part[nt], &before, 1, MPI_LONG_LONG, MPI_SUM, comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) before = 0;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        long lo = n_local * t / T, hi = n_local * (t + 1) / T;
        long long s = before + part[t];
        for (long i = lo; i < hi; ++i) y_local[i] = (s += x_local[i]);
    }
    free(part);
}
