// category: collective
#include <mpi.h>
#include <stdio.h>

#define MAXP 64

/* Inclusive prefix sums over ranks, collected on rank 0 and printed in rank order. */
int main(int argc, char **argv) {
    int rank, size;
    long value, prefix = 0, all[MAXP];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    value = 10L * rank + 1;
    MPI_Scan(&value, &prefix, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Gather(&prefix, 1, MPI_LONG, all, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("%ld%c", all[r], r + 1 < size ? ' ' : '\n');
    }
    MPI_Finalize();
    return 0;
}
