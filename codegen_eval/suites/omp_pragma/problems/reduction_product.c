// category: reduction
#include <stdio.h>

#define N (1L << 24)

/* The product wraps modulo 2^64, which is still associative and commutative. */
int main(void) {
    unsigned long long prod = 1;
    #pragma omp parallel for reduction(*:prod) // @target
    for (long i = 0; i < N; i++)
        prod *= (unsigned long long)(2 * (i % 1000) + 1);
    printf("product mod 2^64 = %llu\n", prod);
    return 0;
}
