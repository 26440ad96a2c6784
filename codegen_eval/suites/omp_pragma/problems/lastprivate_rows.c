// category: lastprivate
#include <stdio.h>
#include <stdlib.h>

#define ROWS 64
#define COLS (1 << 15)

/* `last` must hold the value of the sequentially last iteration after each loop. */
int main(void) {
    int *data = malloc((size_t)ROWS * COLS * sizeof *data);
    for (long k = 0; k < (long)ROWS * COLS; k++)
        data[k] = (int)((k * 48271L) % 2147483647L % 1000);
    long long total = 0;
    for (int r = 0; r < ROWS; r++) {
        int last = -1;
        #pragma omp parallel for lastprivate(last) // @target
        for (int c = 0; c < COLS; c++)
            last = data[(long)r * COLS + c] + c;
        total += (long long)last * (r + 1);
    }
    printf("%lld\n", total);
    free(data);
    return 0;
}
