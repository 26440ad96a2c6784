// category: dependence
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 21)

/* Gauss-Seidel style: each update reads the value just written at i-1. */
int main(void) {
    int *a = malloc(N * sizeof *a);
    for (int i = 0; i < N; i++)
        a[i] = (i * 7919) % 10007;
    for (int sweep = 0; sweep < 16; sweep++) {
        // @target none
        for (int i = 1; i < N - 1; i++)
            a[i] = (a[i - 1] + 2 * a[i] + a[i + 1]) / 4;
    }
    long long check = 0;
    for (int i = 0; i < N; i++)
        check += (long long)a[i] * (i % 23 + 1);
    printf("%lld\n", check);
    free(a);
    return 0;
}
