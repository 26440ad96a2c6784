#define TILE 16

/* shared-memory tiled product; n need not be a multiple of TILE */
__global__ static void gemm_kernel(int n, const double *A, const double *B, double *C) {
    __shared__ double as[TILE][TILE], bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    double s = 0.0;
    for (int t = 0; t < n; t += TILE) {
        as[threadIdx.y][threadIdx.x] =
            (row < n && t + threadIdx.x < n) ? A[(long)row * n + t + threadIdx.x] : 0.0;
        bs[threadIdx.y][threadIdx.x] =
            (col < n && t + threadIdx.y < n) ? B[(long)(t + threadIdx.y) * n + col] : 0.0;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) s += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) C[(long)row * n + col] = s;
}

void gemm_cuda(int n, const double *d_A, const double *d_B, double *d_C) {
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    gemm_kernel<<<grid, block>>>(n, d_A, d_B, d_C);
}
