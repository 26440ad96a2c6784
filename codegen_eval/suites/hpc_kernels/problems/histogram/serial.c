void histogram(long n, const int *data, int nbins, long long *counts) {
    for (int b = 0; b < nbins; ++b) counts[b] = 0;
    for (long i = 0; i < n; ++i) counts[data[i]]++;
}
