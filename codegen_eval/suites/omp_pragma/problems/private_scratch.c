// category: private
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 21)
#define K 8

__attribute__((noinline)) static void fill(int *buf, int i) {
    for (int k = 0; k < K; k++)
        buf[k] = (i * (k + 3) + k) % 17;
}

__attribute__((noinline)) static int score(const int *buf) {
    int s = 0;
    for (int k = 0; k < K; k++)
        s = s * 3 + buf[k];
    return s % 1009;
}

int main(void) {
    int *out = malloc(N * sizeof *out);
    int buf[K];
    #pragma omp parallel for private(buf) // @target
    for (int i = 0; i < N; i++) {
        fill(buf, i);
        out[i] = score(buf);
    }
    long long check = 0;
    for (int i = 0; i < N; i++)
        check += (long long)out[i] * (i % 31 + 1);
    printf("%lld\n", check);
    free(out);
    return 0;
}
