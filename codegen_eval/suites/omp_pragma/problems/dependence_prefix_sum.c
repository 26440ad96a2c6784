// category: dependence
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 22)

static unsigned step(unsigned v) {
    for (int r = 0; r < 8; r++)
        v = (v ^ (v >> 7)) * 2654435761u + 1;
    return v % 7 + 1;
}

int main(void) {
    long *a = calloc(N, sizeof *a);
    int *b = malloc(N * sizeof *b);
    for (int i = 0; i < N; i++)
        b[i] = (i * 31) % 7 + 1;
    a[0] = b[0];
    // @target none
    for (int i = 1; i < N; i++)
        a[i] = a[i - 1] + step((unsigned)b[i] + i);
    long long check = 0;
    for (int i = 0; i < N; i += 4096)
        check += a[i] % 1000003;
    printf("%ld %lld\n", a[N - 1], check);
    free(a);
    free(b);
    return 0;
}
