// category: reduction
#include <stdio.h>

#define N (1L << 25)

int main(void) {
    long long sum = 0;
    #pragma omp parallel for reduction(+:sum) // @target
    for (long i = 0; i < N; i++)
        sum += (long long)((i * 2654435761UL) % 1000);
    printf("sum = %lld\n", sum);
    return 0;
}
