// category: collective
#include <mpi.h>
#include <stdio.h>

#define LOCAL 500

/* Every rank needs the global sum to normalise its values; rank 0 reports the largest. */
int main(int argc, char **argv) {
    int rank, size;
    long v[LOCAL], local_sum = 0, global_sum = 0, local_max = 0, global_max = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < LOCAL; i++) {
        v[i] = (rank * 7919L + i * 104729L) % 1000 + 1;
        local_sum += v[i];
    }
    MPI_Allreduce(&local_sum, &global_sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < LOCAL; i++) {
        long scaled = v[i] * 1000000L / global_sum;
        if (scaled > local_max)
            local_max = scaled;
    }
    MPI_Reduce(&local_max, &global_max, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sum %ld max scaled %ld\n", global_sum, global_max);
    MPI_Finalize();
    return 0;
}
