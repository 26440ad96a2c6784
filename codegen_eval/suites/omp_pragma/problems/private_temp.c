// category: private
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 22)

int main(void) {
    int *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    int t, u;
    for (int i = 0; i < N; i++)
        x[i] = (i * 37) % 1001 - 500;
    #pragma omp parallel for private(t, u) // @target
    for (int i = 0; i < N; i++) {
        t = x[i] * 3 + 1;
        u = t > 0 ? t : -t;
        y[i] = u % 251 + t / 7;
    }
    long long check = 0;
    for (int i = 0; i < N; i++)
        check += (long long)y[i] * (i % 11);
    printf("%lld\n", check);
    free(x);
    free(y);
    return 0;
}
