void gemm(int n, const double *A, const double *B, double *C) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) {
        double *c = C + (long)i * n;
        for (int j = 0; j < n; ++j) c[j] = 0.0;
        for (int k = 0; k < n; ++k) {
            double a = A[(long)i * n + k];
            for (int j = 0; j < n; ++j) c[j] += a * B[(long)k * n + j];
        }
    }
}
