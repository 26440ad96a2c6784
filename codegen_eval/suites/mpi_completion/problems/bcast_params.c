// category: collective
#include <mpi.h>
#include <stdio.h>

/* Rank 0 owns the parameters; every rank evaluates its share of a polynomial sum. */
int main(int argc, char **argv) {
    int rank, size;
    long params[3] = {0, 0, 0};
    long local = 0, total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        params[0] = 100000;
        params[1] = 3;
        params[2] = 11;
    }
    MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_WORLD);
    for (long i = rank; i < params[0]; i += size)
        local += (params[1] * i * i + params[2] * i) % 1009;
    MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("total %ld\n", total);
    MPI_Finalize();
    return 0;
}
