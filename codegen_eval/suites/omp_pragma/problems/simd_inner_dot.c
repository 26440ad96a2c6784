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
    /* Small integers: every partial sum of a row is an integer below 2^24, exact in float in
     * any order of the lanes. Not periodic along a row, so each row's dot product is its own
     * and nonzero: with (k % 7) - 3 against c % 5 every row summed to 0, and answers that
     * lost `acc` (private, a product reduction) printed the right 0. */
    for (long k = 0; k < (long)ROWS * COLS; k++)
        m[k] = (float)((k ^ (k >> 7)) % 9) - 3.0f;
    for (int c = 0; c < COLS; c++)
        w[c] = (float)(c % 5 + 1);
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
