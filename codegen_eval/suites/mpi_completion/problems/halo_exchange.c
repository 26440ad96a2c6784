// category: point_to_point
#include <mpi.h>
#include <stdio.h>

#define LOCAL 64
#define STEPS 20

/* 1-D diffusion on integers: each rank owns LOCAL cells plus one ghost cell per side. */
int main(int argc, char **argv) {
    int rank, size;
    long u[LOCAL + 2], next[LOCAL + 2];
    long local = 0, total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    for (int i = 0; i < LOCAL + 2; i++)
        u[i] = 0;
    for (int i = 1; i <= LOCAL; i++)
        u[i] = ((rank * LOCAL + i) * 37) % 1000;
    for (int s = 0; s < STEPS; s++) {
        MPI_Sendrecv(&u[LOCAL], 1, MPI_LONG, right, 0, &u[0], 1, MPI_LONG, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[1], 1, MPI_LONG, left, 1, &u[LOCAL + 1], 1, MPI_LONG, right, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 1; i <= LOCAL; i++)
            next[i] = (u[i - 1] + 2 * u[i] + u[i + 1]) / 4;
        for (int i = 1; i <= LOCAL; i++)
            u[i] = next[i];
    }
    for (int i = 1; i <= LOCAL; i++)
        local += u[i] * (rank * LOCAL + i);
    MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("weighted sum after %d steps: %ld\n", STEPS, total);
    MPI_Finalize();
    return 0;
}
