// Test fixture driver for 00_reduce_sum_of_squares (serial, omp, mpi, mpi+omp).
#include <cstdlib>
#include <vector>

#include "utilities.hpp"
#include "baseline.hpp"
#include "generated-code.hpp"

struct Context {
    std::vector<double> x;
    double result;
};

void reset(Context *ctx) {
    fillUniform(ctx->x, -1.0, 1.0);
    BCAST(ctx->x, DOUBLE);
}

Context *init() {
    Context *ctx = new Context();
    ctx->x.resize(DRIVER_PROBLEM_SIZE);
    reset(ctx);
    return ctx;
}

void NO_OPTIMIZE compute(Context *ctx) { ctx->result = sumOfSquares(ctx->x); }

void NO_OPTIMIZE best(Context *ctx) { ctx->result = correctSumOfSquares(ctx->x); }

bool validate(Context *ctx) {
    int rank;
    GET_RANK(rank);
    for (int trial = 0; trial < MAX_VALIDATION_ATTEMPTS; ++trial) {
        std::vector<double> x(1000 + trial);
        fillUniform(x, -2.0, 2.0);
        BCAST(x, DOUBLE);
        const double expected = correctSumOfSquares(x);
        const double got = sumOfSquares(x);
        bool ok = true;
        if (IS_ROOT(rank) && !closeEnough(expected, got, 1e-6 * (1.0 + expected))) ok = false;
        BCAST_PTR(&ok, 1, CXX_BOOL);
        if (!ok) return false;
    }
    return true;
}

void destroy(Context *ctx) { delete ctx; }
