void gemm(int n, const double *A, const double *B, double *C) {
    for (long i = 0; i < (long)n * n; ++i) C[i] = 0.0;
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < n; ++k) {
            double a = A[(long)i * n + k];
            for (int j = 0; j < n; ++j) C[(long)i * n + j] += a * B[(long)k * n + j];
        }
}
