// category: collective
#include <mpi.h>
#include <stdio.h>

#define MAXP 64

/* Rank r holds row r of a size x size matrix; an all-to-all leaves it with column r. */
int main(int argc, char **argv) {
    int rank, size;
    int row[MAXP], col[MAXP];
    long local = 0, total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int j = 0; j < size; j++)
        row[j] = rank * 10 + j;
    MPI_Alltoall(row, 1, MPI_INT, col, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        local += (long)col[i] * (i + 1) * (rank + 2);
    MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("transpose check %ld\n", total);
    MPI_Finalize();
    return 0;
}
