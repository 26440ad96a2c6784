// category: simd
#include <stdio.h>
#include <stdlib.h>

#define ROWS 1024
#define COLS 4096

/* The rows are already spread over threads; the inner loop is left to vectorise. */
int main(void) {
    float *m = malloc((size_t)ROWS * COLS * sizeof *m);
    float *w = malloc(COLS * sizeof *w);
    double *out = malloc(ROWS * sizeof *out);
    for (long k = 0; k < (long)ROWS * COLS; k++)
        m[k] = (float)(k % 7) - 3.0f;
    for (int c = 0; c < COLS; c++)
        w[c] = (float)(c % 5);
    #pragma omp parallel for
    for (int r = 0; r < ROWS; r++) {
        float acc = 0.0f;
        const float *row = m + (long)r * COLS;
        #pragma omp simd reduction(+:acc) // @target
        for (int c = 0; c < COLS; c++)
            acc += row[c] * w[c];
        out[r] = acc;
    }
    double check = 0.0;
    for (int r = 0; r < ROWS; r++)
        check += out[r] * (r % 3 + 1);
    printf("%.1f\n", check);
    free(m);
    free(w);
    free(out);
    return 0;
}
