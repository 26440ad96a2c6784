// Test fixture: main() for OpenMP builds. Optional argument: thread count.
#include <cstdio>
#include <string>

#include <omp.h>

class Context;
Context *init();
void compute(Context *ctx);
void best(Context *ctx);
bool validate(Context *ctx);
void reset(Context *ctx);
void destroy(Context *ctx);

int main(int argc, char **argv) {
    if (argc > 2) {
        std::printf("Usage: %s <?num_threads>\n", argv[0]);
        return 1;
    }
    const int NITER = 5;
    omp_set_num_threads(argc > 1 ? std::stoi(argv[1]) : 1);
    Context *ctx = init();
    const bool ok = validate(ctx);
    std::printf("Validation: %s\n", ok ? "PASS" : "FAIL");
    if (!ok) {
        destroy(ctx);
        return 0;
    }
    double t = 0.0;
    for (int i = 0; i < NITER; ++i) {
        const double s = omp_get_wtime();
        compute(ctx);
        t += omp_get_wtime() - s;
        reset(ctx);
    }
    std::printf("Time: %.9f\n", t / NITER);
    t = 0.0;
    for (int i = 0; i < NITER; ++i) {
        const double s = omp_get_wtime();
        best(ctx);
        t += omp_get_wtime() - s;
        reset(ctx);
    }
    std::printf("BestSequential: %.9f\n", t / NITER);
    destroy(ctx);
    return 0;
}
