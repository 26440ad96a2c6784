// category: collective
#include <mpi.h>
#include <stdio.h>

/* Midpoint rule for the integral of 4/(1+x^2) over [0,1]; intervals dealt round-robin. */
int main(int argc, char **argv) {
    int rank, size;
    int n = 0;
    double local = 0.0, pi = 0.0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        n = 2000000;
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    double h = 1.0 / n;
    for (int i = rank; i < n; i += size) {
        double x = h * (i + 0.5);
        local += 4.0 / (1.0 + x * x);
    }
    local *= h;
    MPI_Reduce(&local, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pi ~ %.8f with n = %d\n", pi, n);
    MPI_Finalize();
    return 0;
}
