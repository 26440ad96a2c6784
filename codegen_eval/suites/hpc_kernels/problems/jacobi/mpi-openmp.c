#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* Local rows plus one halo row above and below; halos are swapped with the neighbours before
 * every sweep. Global rows 0 and n-1 (and columns 0, n-1) never change. */
void jacobi_mpi(int n, int iters, int row_off, int nrows_local, double *u_local, MPI_Comm comm) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    size_t rowb = (size_t)n * sizeof(double);
    double *a = calloc((size_t)(nrows_local + 2) * n, sizeof(double));
    double *b = calloc((size_t)(nrows_local + 2) * n, sizeof(double));
    memcpy(a + n, u_local, nrows_local * rowb);
    memcpy(b + n, u_local, nrows_local * rowb);
    for (int t = 0; t < iters; ++t) {
        MPI_Sendrecv(a + n, n, MPI_DOUBLE, up, 0, a + (size_t)(nrows_local + 1) * n, n, MPI_DOUBLE,
                     down, 0, comm, MPI_STATUS_IGNORE);
        MPI_Sendrecv(a + (size_t)nrows_local * n, n, MPI_DOUBLE, down, 1, a, n, MPI_DOUBLE, up, 1,
                     comm, MPI_STATUS_IGNORE);
#pragma omp parallel for schedule(static)
        for (int li = 1; li <= nrows_local; ++li) {
            int gi = row_off + li - 1;
            if (gi == 0 || gi == n - 1) continue;
            for (int j = 1; j < n - 1; ++j)
                b[(size_t)li * n + j] = 0.25 * (a[(size_t)(li - 1) * n + j] + a[(size_t)(li + 1) * n + j] +
                                                a[(size_t)li * n + j - 1] + a[(size_t)li * n + j + 1]);
        }
        double *s = a;
        a = b;
        b = s;
    }
    memcpy(u_local, a + n, nrows_local * rowb);
    free(a);
    free(b);
}
