// category: synchronization
#include <mpi.h>
#include <stdio.h>

#define WORK 200000

/* Time a phase between two barriers; rank 0 reports the slowest rank and the result. */
int main(int argc, char **argv) {
    int rank, size;
    long acc = 0, total = 0;
    double elapsed, slowest = 0.0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < WORK * (rank + 1); i++)
        acc = (acc * 31 + i) % 1000003;
    MPI_Barrier(MPI_COMM_WORLD);
    elapsed = MPI_Wtime() - t0;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&acc, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result %ld, timed: %s\n", total, slowest > 0.0 ? "yes" : "no");
    MPI_Finalize();
    return 0;
}
