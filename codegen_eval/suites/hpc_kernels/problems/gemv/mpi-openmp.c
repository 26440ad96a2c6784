#include <mpi.h>
#include <stdlib.h>

/* A and x are replicated: each rank computes a contiguous block of rows, rank 0 gathers. */
void gemv_mpi(int m, int n, const double *A, const double *x, double *y, MPI_Comm comm) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int p = 0, off = 0; p < size; ++p) {
        counts[p] = m / size + (p < m % size);
        displs[p] = off;
        off += counts[p];
    }
    int r0 = displs[rank], nr = counts[rank];
    double *mine = malloc((nr > 0 ? nr : 1) * sizeof(double));
#pragma omp parallel for schedule(static)
    for (int i = 0; i < nr; ++i) {
        double s = 0.0;
        const double *row = A + (long)(r0 + i) * n;
        for (int j = 0; j < n; ++j) s += row[j] * x[j];
        mine[i] = s;
    }
    MPI_Gatherv(mine, nr, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE, 0, comm);
    free(mine);
    free(counts);
    free(displs);
}
