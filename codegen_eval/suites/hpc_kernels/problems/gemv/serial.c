void gemv(int m, int n, const double *A, const double *x, double *y) {
    for (int i = 0; i < m; ++i) {
        double s = 0.0;
        for (int j = 0; j < n; ++j) s += A[(long)i * n + j] * x[j];
        y[i] = s;
    }
}
