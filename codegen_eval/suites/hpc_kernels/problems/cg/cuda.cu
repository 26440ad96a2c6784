#include <cuda_runtime.h>

__global__ static void spmv_dot(int n, const int *rp, const int *ci, const double *v,
                                const double *p, double *q, double *pq) {
    __shared__ double part[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double t = 0.0;
    if (i < n) {
        double s = 0.0;
        for (int k = rp[i]; k < rp[i + 1]; ++k) s += v[k] * p[ci[k]];
        q[i] = s;
        t = p[i] * s;
    }
    part[threadIdx.x] = t;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o /= 2) {
        if (threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(pq, part[0]);
}

/* x += alpha p; r -= alpha q; rs_new += r.r */
__global__ static void update(int n, const double *alpha_rs, double *x, double *r,
                              const double *p, const double *q, double *rs_new) {
    __shared__ double part[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double alpha = alpha_rs[0], t = 0.0;
    if (i < n) {
        x[i] += alpha * p[i];
        r[i] -= alpha * q[i];
        t = r[i] * r[i];
    }
    part[threadIdx.x] = t;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o /= 2) {
        if (threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(rs_new, part[0]);
}

__global__ static void direction(int n, double beta, const double *r, double *p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = r[i] + beta * p[i];
}

__global__ static void init(int n, const double *b, double *x, double *r, double *p, double *rs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = 0.0;
        r[i] = p[i] = b[i];
        atomicAdd(rs, b[i] * b[i]);
    }
}

int cg_cuda(int n, const int *d_row_ptr, const int *d_col_idx, const double *d_vals,
            const double *d_b, double *d_x, double tol, int max_iter) {
    double *r, *p, *q, *sc; /* sc: [pq, rs_new, rs0, alpha] */
    cudaMalloc((void **)&r, n * sizeof(double));
    cudaMalloc((void **)&p, n * sizeof(double));
    cudaMalloc((void **)&q, n * sizeof(double));
    cudaMalloc((void **)&sc, 4 * sizeof(double));
    cudaMemset(sc, 0, 4 * sizeof(double));
    int blocks = (n + 255) / 256;
    init<<<blocks, 256>>>(n, d_b, d_x, r, p, sc + 2);
    double rs;
    cudaMemcpy(&rs, sc + 2, sizeof(double), cudaMemcpyDeviceToHost);
    double stop = tol * tol * rs;
    int it = 0;
    for (; it < max_iter && rs > stop; ++it) {
        cudaMemset(sc, 0, 2 * sizeof(double));
        spmv_dot<<<blocks, 256>>>(n, d_row_ptr, d_col_idx, d_vals, p, q, sc);
        double pq;
        cudaMemcpy(&pq, sc, sizeof(double), cudaMemcpyDeviceToHost);
        double alpha = rs / pq;
        cudaMemcpy(sc + 3, &alpha, sizeof(double), cudaMemcpyHostToDevice);
        update<<<blocks, 256>>>(n, sc + 3, d_x, r, p, q, sc + 1);
        double rs_new;
        cudaMemcpy(&rs_new, sc + 1, sizeof(double), cudaMemcpyDeviceToHost);
        direction<<<blocks, 256>>>(n, rs_new / rs, r, p);
        rs = rs_new;
    }
    cudaFree(r);
    cudaFree(p);
    cudaFree(q);
    cudaFree(sc);
    return it;
}
