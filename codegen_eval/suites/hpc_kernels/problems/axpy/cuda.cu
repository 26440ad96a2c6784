__global__ static void axpy_kernel(long n, double a, const double *x, double *y) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = a * x[i] + y[i];
}

void axpy_cuda(long n, double a, const double *d_x, double *d_y) {
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    if (blocks > 65535) blocks = 65535;
    axpy_kernel<<<(int)blocks, threads>>>(n, a, d_x, d_y);
}
