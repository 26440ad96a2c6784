// category: nonblocking
#include <mpi.h>
#include <stdio.h>

#define LEN 256

/* Every rank sends a block to its right neighbour and receives one from its left. */
int main(int argc, char **argv) {
    int rank, size;
    int out[LEN], in[LEN];
    MPI_Request reqs[2];
    long local = 0, total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < LEN; i++)
        out[i] = rank * 1000 + i;
    MPI_Irecv(in, LEN, MPI_INT, left, 7, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(out, LEN, MPI_INT, right, 7, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < LEN; i++)
        local += (long)in[i] * (rank + 1);
    MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ring total %ld\n", total);
    MPI_Finalize();
    return 0;
}
