// category: collective
#include <mpi.h>
#include <stdio.h>

#define MAXP 64

/* Each rank learns every rank's load and computes where its own work starts. */
int main(int argc, char **argv) {
    int rank, size;
    int mine, loads[MAXP];
    long offset = 0, check = 0, sum_offsets = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = rank * rank + 3;
    MPI_Allgather(&mine, 1, MPI_INT, loads, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < rank; r++)
        offset += loads[r];
    check = offset * 100 + loads[(rank + 1) % size];
    MPI_Reduce(&check, &sum_offsets, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ranks %d, combined offsets %ld\n", size, sum_offsets);
    MPI_Finalize();
    return 0;
}
