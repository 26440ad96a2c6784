/* one thread per row (scalar CSR kernel) */
__global__ static void spmv_kernel(int n, const int *rp, const int *ci, const double *v,
                                   const double *x, double *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double s = 0.0;
    for (int k = rp[i]; k < rp[i + 1]; ++k) s += v[k] * x[ci[k]];
    y[i] = s;
}

void spmv_cuda(int n, const int *d_row_ptr, const int *d_col_idx, const double *d_vals,
               const double *d_x, double *d_y) {
    spmv_kernel<<<(n + 255) / 256, 256>>>(n, d_row_ptr, d_col_idx, d_vals, d_x, d_y);
}
