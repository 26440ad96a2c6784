// category: parallel_for
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 22)

int main(void) {
    int *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    for (int i = 0; i < N; i++) {
        a[i] = i % 1000;
        b[i] = (i * 7) % 997;
    }
    #pragma omp parallel for // @target
    for (int i = 0; i < N; i++)
        c[i] = 3 * a[i] + b[i];
    long long check = 0;
    for (int i = 0; i < N; i++)
        check += (long long)c[i] * (i % 13);
    printf("%lld\n", check);
    free(a);
    free(b);
    free(c);
    return 0;
}
