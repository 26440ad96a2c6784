// category: reduction
#include <stdio.h>

#define N (1L << 24)

int main(void) {
    long long sum = 0, sumsq = 0;
    #pragma omp parallel for reduction(+:sum, sumsq) // @target
    for (long i = 0; i < N; i++) {
        long long x = (long long)((i * 7919) % 2003) - 1000;
        sum += x;
        sumsq += x * x;
    }
    printf("sum %lld sumsq %lld\n", sum, sumsq);
    return 0;
}
