// category: point_to_point
#include <mpi.h>
#include <stdio.h>

#define ROUNDS 50

/* Ranks 0 and 1 bounce a counter back and forth; each side transforms it. */
int main(int argc, char **argv) {
    int rank, size;
    long value = 7;
    MPI_Status status;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 0) {
            value = (value * 5 + r) % 1000003;
            MPI_Send(&value, 1, MPI_LONG, 1, r, MPI_COMM_WORLD);
            MPI_Recv(&value, 1, MPI_LONG, 1, r, MPI_COMM_WORLD, &status);
        } else if (rank == 1) {
            MPI_Recv(&value, 1, MPI_LONG, 0, r, MPI_COMM_WORLD, &status);
            value = (value * 7 + 3) % 1000003;
            MPI_Send(&value, 1, MPI_LONG, 0, r, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        printf("after %d rounds: %ld (ranks %d)\n", ROUNDS, value, size);
    MPI_Finalize();
    return 0;
}
