#include <mpi.h>
#include <stdlib.h>

/* Rank 0 scatters row blocks of A and broadcasts B; every rank multiplies its rows; rank 0
 * gathers the row blocks of C. */
void gemm_mpi(int n, const double *A, const double *B, double *C, MPI_Comm comm) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int p = 0, off = 0; p < size; ++p) {
        int rows = n / size + (p < n % size);
        counts[p] = rows * n;
        displs[p] = off;
        off += counts[p];
    }
    int nr = counts[rank] / n;
    double *a = malloc((counts[rank] + 1) * sizeof(double));
    double *c = malloc((counts[rank] + 1) * sizeof(double));
    double *b = malloc((long)n * n * sizeof(double));
    MPI_Scatterv(A, counts, displs, MPI_DOUBLE, a, counts[rank], MPI_DOUBLE, 0, comm);
    if (rank == 0)
        for (long i = 0; i < (long)n * n; ++i) b[i] = B[i];
    MPI_Bcast(b, n * n, MPI_DOUBLE, 0, comm);
    for (int i = 0; i < nr; ++i) {
        double *ci = c + (long)i * n;
        for (int j = 0; j < n; ++j) ci[j] = 0.0;
        for (int k = 0; k < n; ++k) {
            double aik = a[(long)i * n + k];
            for (int j = 0; j < n; ++j) ci[j] += aik * b[(long)k * n + j];
        }
    }
    MPI_Gatherv(c, counts[rank], MPI_DOUBLE, C, counts, displs, MPI_DOUBLE, 0, comm);
    free(a);
    free(b);
    free(c);
    free(counts);
    free(displs);
}
