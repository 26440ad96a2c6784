// Test fixture GPU driver for 00_reduce_sum_of_squares: the kernel writes one sum.
#include <cstdlib>
#include <vector>

#include "utilities.hpp"
#include "baseline.hpp"
#include "generated-code.cuh"

struct Context {
    std::vector<double> x;
};

Context *init() {
    Context *ctx = new Context();
    ctx->x.resize(DRIVER_PROBLEM_SIZE);
    fillUniform(ctx->x, -1.0, 1.0);
    return ctx;
}

bool validate(Context *ctx) {
    double *d_x = nullptr, *d_sum = nullptr, sum = 0.0;
    cudaMalloc(&d_x, ctx->x.size() * sizeof(double));
    cudaMalloc(&d_sum, sizeof(double));
    cudaMemcpy(d_x, ctx->x.data(), ctx->x.size() * sizeof(double), cudaMemcpyHostToDevice);
    cudaMemcpy(d_sum, &sum, sizeof(double), cudaMemcpyHostToDevice);
    sumOfSquares<<<64, 128>>>(d_x, ctx->x.size(), d_sum);
    cudaMemcpy(&sum, d_sum, sizeof(double), cudaMemcpyDeviceToHost);
    cudaFree(d_x);
    cudaFree(d_sum);
    return closeEnough(sum, correctSumOfSquares(ctx->x), 1e-6 * (1.0 + sum));
}

void destroy(Context *ctx) { delete ctx; }
