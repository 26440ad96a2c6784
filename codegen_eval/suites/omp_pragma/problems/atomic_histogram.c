// category: atomic
#include <stdio.h>

#define N (1L << 24)
#define BINS 16

int main(void) {
    long hist[BINS] = {0};
    #pragma omp parallel for
    for (long i = 0; i < N; i++) {
        int bin = (int)((i * 2654435761UL >> 9) % BINS);
        #pragma omp atomic // @target
        hist[bin]++;
    }
    for (int b = 0; b < BINS; b++)
        printf("%ld%c", hist[b], b + 1 < BINS ? ' ' : '\n');
    return 0;
}
