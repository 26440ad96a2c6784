// Test fixture driver for 01_transform_scale_points (serial, omp, mpi, mpi+omp).
#include <cstdlib>
#include <vector>

#include "utilities.hpp"
#include "generated-code.hpp"
#include "baseline.hpp"

struct Context {
    std::vector<Point> points;
    double factor;
};

void reset(Context *ctx) {
    for (auto &p : ctx->points) {
        p.x = std::rand() % 200 - 100;
        p.y = std::rand() % 200 - 100;
    }
    BCAST_PTR(ctx->points.data(), 2 * ctx->points.size(), DOUBLE);
}

Context *init() {
    Context *ctx = new Context();
    ctx->points.resize(DRIVER_PROBLEM_SIZE);
    ctx->factor = 1.5;
    reset(ctx);
    return ctx;
}

void NO_OPTIMIZE compute(Context *ctx) { scalePoints(ctx->points, ctx->factor); }

void NO_OPTIMIZE best(Context *ctx) { correctScalePoints(ctx->points, ctx->factor); }

bool validate(Context *ctx) {
    int rank;
    GET_RANK(rank);
    for (int trial = 0; trial < MAX_VALIDATION_ATTEMPTS; ++trial) {
        std::vector<Point> input(257 + trial);
        for (auto &p : input) {
            p.x = std::rand() % 100;
            p.y = -(std::rand() % 100);
        }
        BCAST_PTR(input.data(), 2 * input.size(), DOUBLE);
        const double factor = 0.5 + trial;
        std::vector<Point> expected = input, got = input;
        correctScalePoints(expected, factor);
        scalePoints(got, factor);
        bool ok = got.size() == expected.size();
        if (IS_ROOT(rank) && ok) {
            for (size_t i = 0; i < got.size(); ++i) {
                ok = ok && closeEnough(got[i].x, expected[i].x) && closeEnough(got[i].y, expected[i].y);
            }
        }
        BCAST_PTR(&ok, 1, CXX_BOOL);
        if (!ok) return false;
    }
    return true;
}

void destroy(Context *ctx) { delete ctx; }
