// category: synchronization
// required: MPI_Barrier@11-13 MPI_Barrier@16
#include <mpi.h>
#include <stdio.h>

#define WORK 200000

/* Time a phase between two barriers; rank 0 reports the slowest rank's time and work. */
int main(int argc, char **argv) {
    int rank, size;
    long acc = 0, total = 0;
    double mine[2], worst[2] = {0.0, 0.0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < WORK * (rank + 1); i++)
        acc = (acc * 31 + i) % 1000003;
    MPI_Barrier(MPI_COMM_WORLD);
    mine[0] = MPI_Wtime() - t0;
    mine[1] = WORK * (rank + 1);
    MPI_Reduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&acc, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result %ld, most work %.0f, timed: %s\n", total, worst[1],
               worst[0] > 0.0 ? "yes" : "no");
    MPI_Finalize();
    return 0;
}
