#include <cuda_runtime.h>

#define B 1024

/* each block scans B elements in shared memory (Hillis-Steele) and records its total */
__global__ static void block_scan(long n, const long long *x, long long *y, long long *sums) {
    __shared__ long long s[B];
    long i = (long)blockIdx.x * B + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0;
    __syncthreads();
    for (int o = 1; o < B; o *= 2) {
        long long add = threadIdx.x >= o ? s[threadIdx.x - o] : 0;
        __syncthreads();
        s[threadIdx.x] += add;
        __syncthreads();
    }
    if (i < n) y[i] = s[threadIdx.x];
    if (threadIdx.x == B - 1) sums[blockIdx.x] = s[B - 1];
}

__global__ static void add_offsets(long n, long long *y, const long long *scanned_sums) {
    long i = (long)blockIdx.x * B + threadIdx.x;
    if (blockIdx.x > 0 && i < n) y[i] += scanned_sums[blockIdx.x - 1];
}

/* recursive: scan blocks, scan the block totals, add them back */
void prefix_sum_cuda(long n, const long long *d_x, long long *d_y) {
    long blocks = (n + B - 1) / B;
    long long *sums;
    cudaMalloc((void **)&sums, blocks * sizeof(long long));
    block_scan<<<(unsigned)blocks, B>>>(n, d_x, d_y, sums);
    if (blocks > 1) {
        prefix_sum_cuda(blocks, sums, sums);
        add_offsets<<<(unsigned)blocks, B>>>(n, d_y, sums);
    }
    cudaFree(sums);
}
