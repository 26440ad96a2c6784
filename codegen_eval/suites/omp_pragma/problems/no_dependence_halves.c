// category: parallel_for
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 22)
#define HALF (N / 2)

/* Iteration i reads a[i + HALF], which no iteration of this loop writes. */
int main(void) {
    int *a = malloc(N * sizeof *a);
    for (int i = 0; i < N; i++)
        a[i] = (i * 13) % 1000;
    #pragma omp parallel for // @target
    for (int i = 0; i < HALF; i++)
        a[i] = a[i] + a[i + HALF];
    long long check = 0;
    for (int i = 0; i < N; i++)
        check += (long long)a[i] * (i % 19 + 1);
    printf("%lld\n", check);
    free(a);
    return 0;
}
