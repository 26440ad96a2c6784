#include <cuda_runtime.h>

/* shared-memory sub-histograms per block (cheap atomics), then one global atomic per bin */
__global__ static void hist_kernel(long n, const int *data, int nbins, unsigned long long *out) {
    extern __shared__ unsigned long long sh[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) sh[b] = 0;
    __syncthreads();
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        atomicAdd(&sh[data[i]], 1ULL);
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x)
        if (sh[b]) atomicAdd(&out[b], sh[b]);
}

void histogram_cuda(long n, const int *d_data, int nbins, long long *d_counts) {
    cudaMemset(d_counts, 0, nbins * sizeof(long long));
    hist_kernel<<<256, 256, nbins * sizeof(unsigned long long)>>>(
        n, d_data, nbins, (unsigned long long *)d_counts);
}
