// category: dependence
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 24)

int main(void) {
    unsigned *out = malloc(N * sizeof *out);
    unsigned x = 12345u;
    // @target none
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        out[i] = (x >> 16) & 0x7fff;
    }
    unsigned long long check = 0;
    for (int i = 0; i < N; i++)
        check = check * 31 + out[i];
    printf("%llu\n", check);
    free(out);
    return 0;
}
