// category: reduction
#include <stdio.h>
#include <stdint.h>

#define N (1L << 24)

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

int main(void) {
    uint64_t h = 0;
    #pragma omp parallel for reduction(^:h) // @target
    for (long i = 0; i < N; i++)
        h ^= mix((uint64_t)i);
    printf("%016llx\n", (unsigned long long)h);
    return 0;
}
