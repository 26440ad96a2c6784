// Test fixture: main() for serial builds. Optional argument: iteration count.
#include <chrono>
#include <cstdio>
#include <string>

class Context;
Context *init();
void compute(Context *ctx);
void best(Context *ctx);
bool validate(Context *ctx);
void reset(Context *ctx);
void destroy(Context *ctx);

static double seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv) {
    if (argc > 2) {
        std::printf("Usage: %s <?niter>\n", argv[0]);
        return 1;
    }
    int NITER = 5;
    if (argc > 1) NITER = std::stoi(argv[1]);
    Context *ctx = init();
    const bool ok = validate(ctx);
    std::printf("Validation: %s\n", ok ? "PASS" : "FAIL");
    if (!ok) {
        destroy(ctx);
        return 0;
    }
    double t = 0.0;
    for (int i = 0; i < NITER; ++i) {
        const double s = seconds();
        compute(ctx);
        t += seconds() - s;
        reset(ctx);
    }
    std::printf("Time: %.9f\n", t / NITER);
    t = 0.0;
    for (int i = 0; i < NITER; ++i) {
        const double s = seconds();
        best(ctx);
        t += seconds() - s;
        reset(ctx);
    }
    std::printf("BestSequential: %.9f\n", t / NITER);
    destroy(ctx);
    return 0;
}
