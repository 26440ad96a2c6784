#include <cuda_runtime.h>

/* Two passes: the max as an order-preserving 64-bit key (atomicMax), then the smallest
 * index holding that key (atomicMin). A (value, index) pair does not fit one 64-bit atomic. */
__device__ static unsigned long long order_key(double v) {
    unsigned long long b = (unsigned long long)__double_as_longlong(v);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ULL);
}

__global__ static void max_pass(long n, const double *x, unsigned long long *key) {
    unsigned long long k = 0;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        unsigned long long c = order_key(x[i]);
        if (c > k) k = c;
    }
    for (int o = 16; o > 0; o /= 2) {
        unsigned long long other = __shfl_down_sync(0xffffffffu, k, o);
        if (other > k) k = other;
    }
    if (threadIdx.x % 32 == 0) atomicMax(key, k);
}

__global__ static void idx_pass(long n, const double *x, const unsigned long long *key,
                                unsigned long long *idx) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        if (order_key(x[i]) == *key) atomicMin(idx, (unsigned long long)i);
}

double max_loc_cuda(long n, const double *d_x, long *idx) {
    unsigned long long *d;
    cudaMalloc((void **)&d, 2 * sizeof(unsigned long long));
    unsigned long long init[2] = {0ULL, ~0ULL};
    cudaMemcpy(d, init, sizeof init, cudaMemcpyHostToDevice);
    max_pass<<<1024, 256>>>(n, d_x, d);
    idx_pass<<<1024, 256>>>(n, d_x, d, d + 1);
    unsigned long long host[2];
    cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
    cudaFree(d);
    *idx = (long)host[1];
    double v;
    cudaMemcpy(&v, d_x + host[1], sizeof v, cudaMemcpyDeviceToHost);
    return v;
}
