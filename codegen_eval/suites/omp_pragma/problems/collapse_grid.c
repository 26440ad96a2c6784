// category: collapse
#include <stdio.h>
#include <stdlib.h>

#define PLANES 3
#define CELLS (1 << 20)

/* Only three planes: the outer loop alone cannot keep four threads busy. */
int main(void) {
    int *g = malloc((size_t)PLANES * CELLS * sizeof *g);
    #pragma omp parallel for collapse(2) // @target
    for (int p = 0; p < PLANES; p++)
        for (int c = 0; c < CELLS; c++)
            g[(long)p * CELLS + c] = (p + 1) * (c % 97) - (c % 13);
    long long check = 0;
    for (long k = 0; k < (long)PLANES * CELLS; k++)
        check += (long long)g[k] * (k % 7 + 1);
    printf("%lld\n", check);
    free(g);
    return 0;
}
