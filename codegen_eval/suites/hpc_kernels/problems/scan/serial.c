void prefix_sum(long n, const long long *x, long long *y) {
    long long s = 0;
    for (long i = 0; i < n; ++i) y[i] = (s += x[i]);
}
