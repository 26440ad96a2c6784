void axpy(long n, double a, const double *x, double *y) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
