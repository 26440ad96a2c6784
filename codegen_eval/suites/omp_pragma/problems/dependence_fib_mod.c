// category: dependence
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 21)
#define M 1000003

static int salt(int i) {
    unsigned v = (unsigned)i;
    for (int r = 0; r < 8; r++)
        v = (v ^ (v >> 9)) * 40503u + 7;
    return (int)(v % 5);
}

int main(void) {
    int *f = malloc(N * sizeof *f);
    f[0] = 0;
    f[1] = 1;
    // @target none
    for (int i = 2; i < N; i++)
        f[i] = (f[i - 1] + f[i - 2] + salt(i)) % M;
    long long check = 0;
    for (int i = 0; i < N; i += 1024)
        check += f[i];
    printf("%d %lld\n", f[N - 1], check);
    free(f);
    return 0;
}
