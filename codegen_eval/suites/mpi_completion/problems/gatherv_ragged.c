// category: collective
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXP 64

/* Rank r contributes r + 2 values; rank 0 collects the ragged pieces in rank order. */
int main(int argc, char **argv) {
    int rank, size;
    int mine[MAXP + 2], counts[MAXP], displs[MAXP];
    int *all = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = rank + 2;
    for (int i = 0; i < n; i++)
        mine[i] = rank * 100 + i;
    int total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = r + 2;
        displs[r] = total;
        total += counts[r];
    }
    if (rank == 0)
        all = malloc(total * sizeof *all);
    MPI_Gatherv(mine, n, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        long check = 0;
        for (int i = 0; i < total; i++)
            check = check * 7 + all[i];
        printf("%d values, check %ld\n", total, check);
        free(all);
    }
    MPI_Finalize();
    return 0;
}
