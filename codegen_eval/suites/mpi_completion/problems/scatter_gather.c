// category: collective
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHUNK 1000

int main(int argc, char **argv) {
    int rank, size;
    int *all = NULL, part[CHUNK];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        all = malloc((size_t)CHUNK * size * sizeof *all);
        for (int i = 0; i < CHUNK * size; i++)
            all[i] = i % 251;
    }
    MPI_Scatter(all, CHUNK, MPI_INT, part, CHUNK, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < CHUNK; i++)
        part[i] = part[i] * part[i] + rank;
    MPI_Gather(part, CHUNK, MPI_INT, all, CHUNK, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        long long check = 0;
        for (int i = 0; i < CHUNK * size; i++)
            check += (long long)all[i] * (i % 7 + 1);
        printf("checksum %lld\n", check);
        free(all);
    }
    MPI_Finalize();
    return 0;
}
