// category: collective
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS_PER_RANK 16
#define COLS 64

/* y = A x with A distributed by blocks of rows and x replicated. */
int main(int argc, char **argv) {
    int rank, size;
    int *a = NULL, *y = NULL;
    int x[COLS], block[ROWS_PER_RANK * COLS], ylocal[ROWS_PER_RANK];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rows = ROWS_PER_RANK * size;
    if (rank == 0) {
        a = malloc((size_t)rows * COLS * sizeof *a);
        y = malloc(rows * sizeof *y);
        for (int i = 0; i < rows * COLS; i++)
            a[i] = (i * 17) % 23 - 11;
        for (int j = 0; j < COLS; j++)
            x[j] = j % 5 - 2;
    }
    MPI_Bcast(x, COLS, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatter(a, ROWS_PER_RANK * COLS, MPI_INT, block, ROWS_PER_RANK * COLS, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < ROWS_PER_RANK; i++) {
        ylocal[i] = 0;
        for (int j = 0; j < COLS; j++)
            ylocal[i] += block[i * COLS + j] * x[j];
    }
    MPI_Gather(ylocal, ROWS_PER_RANK, MPI_INT, y, ROWS_PER_RANK, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        long check = 0;
        for (int i = 0; i < rows; i++)
            check += (long)y[i] * (i + 1);
        printf("rows %d checksum %ld\n", rows, check);
        free(a);
        free(y);
    }
    MPI_Finalize();
    return 0;
}
