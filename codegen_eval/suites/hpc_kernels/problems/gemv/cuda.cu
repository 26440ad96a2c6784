/* one warp per row: lanes stride over the columns, then a shuffle reduction */
__global__ static void gemv_kernel(int m, int n, const double *A, const double *x, double *y) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= m) return;
    const double *row = A + (long)warp * n;
    double s = 0.0;
    for (int j = lane; j < n; j += 32) s += row[j] * x[j];
    for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) y[warp] = s;
}

void gemv_cuda(int m, int n, const double *d_A, const double *d_x, double *d_y) {
    int threads = 256, rows_per_block = threads / 32;
    gemv_kernel<<<(m + rows_per_block - 1) / rows_per_block, threads>>>(m, n, d_A, d_x, d_y);
}
