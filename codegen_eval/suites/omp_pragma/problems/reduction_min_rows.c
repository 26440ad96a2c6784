// category: reduction
#include <stdio.h>
#include <stdlib.h>

#define ROWS 64
#define COLS (1 << 16)

int main(void) {
    double *v = malloc((size_t)ROWS * COLS * sizeof *v);
    for (long k = 0; k < (long)ROWS * COLS; k++)
        v[k] = (double)(((unsigned long)k * 2654435761UL >> 5) % 1000003) / 8.0 + 1.0;
    double total = 0.0;
    for (int r = 0; r < ROWS; r++) {
        const double *row = v + (long)r * COLS;
        double lo = 1e300;
        #pragma omp parallel for reduction(min:lo) // @target
        for (int c = 0; c < COLS; c++)
            lo = row[c] < lo ? row[c] : lo;
        total += lo * (r + 1);
    }
    printf("weighted row minima: %.3f\n", total);
    free(v);
    return 0;
}
