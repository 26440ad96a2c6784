double max_loc(long n, const double *x, long *idx) {
    double best = x[0];
    long bi = 0;
    for (long i = 1; i < n; ++i)
        if (x[i] > best) {
            best = x[i];
            bi = i;
        }
    *idx = bi;
    return best;
}
