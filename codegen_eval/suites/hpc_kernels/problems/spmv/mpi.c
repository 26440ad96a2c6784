#include <mpi.h>
#include <stdlib.h>

/* Row blocks: every rank needs all of x for its rows (columns are global), so assemble x with
 * an all-gather of the blocks, then multiply the local rows. */
void spmv_mpi(int n, int nrows_local, const int *row_ptr, const int *col_idx,
              const double *vals, const double *x_local, double *y_local, MPI_Comm comm) {
    int size;
    MPI_Comm_size(comm, &size);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int p = 0, off = 0; p < size; ++p) {
        counts[p] = n / size + (p < n % size);
        displs[p] = off;
        off += counts[p];
    }
    double *x = malloc((long)n * sizeof(double));
    MPI_Allgatherv(x_local, nrows_local, MPI_DOUBLE, x, counts, displs, MPI_DOUBLE, comm);
    for (int i = 0; i < nrows_local; ++i) {
        double s = 0.0;
        for (int k = row_ptr[i]; k < row_ptr[i + 1]; ++k) s += vals[k] * x[col_idx[k]];
        y_local[i] = s;
    }
    free(x);
    free(counts);
    free(displs);
}
