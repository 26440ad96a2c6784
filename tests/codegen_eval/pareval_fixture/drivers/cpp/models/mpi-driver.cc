// Test fixture: main() for MPI builds (result checked on rank 0). Optional argument: niter.
#include <cstdio>
#include <string>

#include <mpi.h>
#if defined(FIXTURE_WITH_OMP)
#include <omp.h>
#endif

class Context;
Context *init();
void compute(Context *ctx);
void best(Context *ctx);
bool validate(Context *ctx);
void reset(Context *ctx);
void destroy(Context *ctx);

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc > 2) {
        std::printf("Usage: %s <?arg>\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int NITER = 5;
#if defined(FIXTURE_WITH_OMP)
    omp_set_num_threads(argc > 1 ? std::stoi(argv[1]) : 1);
#else
    if (argc > 1) NITER = std::stoi(argv[1]);
#endif
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Context *ctx = init();
    const bool ok = validate(ctx);
    if (rank == 0) std::printf("Validation: %s\n", ok ? "PASS" : "FAIL");
    if (!ok) {
        destroy(ctx);
        MPI_Finalize();
        return 0;
    }
    double t = 0.0;
    for (int i = 0; i < NITER; ++i) {
        const double s = MPI_Wtime();
        compute(ctx);
        t += MPI_Wtime() - s;
        MPI_Barrier(MPI_COMM_WORLD);
        reset(ctx);
    }
    double sum = 0.0;
    MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) std::printf("Time: %.9f\n", sum / size / NITER);
    t = 0.0;
    for (int i = 0; i < NITER; ++i) {
        const double s = MPI_Wtime();
        best(ctx);
        t += MPI_Wtime() - s;
        reset(ctx);
    }
    if (rank == 0) std::printf("BestSequential: %.9f\n", t / NITER);
    destroy(ctx);
    MPI_Finalize();
    return 0;
}
