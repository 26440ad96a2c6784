// category: private
#include <stdio.h>
#include <stdlib.h>

#define ROWS 2048
#define COLS 2048

int main(void) {
    int i, j;
    long s;
    int *a = malloc((size_t)ROWS * COLS * sizeof *a);
    int *x = malloc(COLS * sizeof *x);
    long *y = malloc(ROWS * sizeof *y);
    for (i = 0; i < ROWS; i++)
        for (j = 0; j < COLS; j++)
            a[(long)i * COLS + j] = (i * 3 + j * 5) % 11 - 5;
    for (j = 0; j < COLS; j++)
        x[j] = j % 9 - 4;
    #pragma omp parallel for private(j, s) // @target
    for (i = 0; i < ROWS; i++) {
        s = 0;
        for (j = 0; j < COLS; j++)
            s += (long)a[(long)i * COLS + j] * x[j];
        y[i] = s;
    }
    long long check = 0;
    for (i = 0; i < ROWS; i++)
        check += y[i] * (i % 5 + 1);
    printf("%lld\n", check);
    free(a);
    free(x);
    free(y);
    return 0;
}
