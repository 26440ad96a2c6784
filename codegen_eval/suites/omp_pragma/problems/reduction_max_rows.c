// category: reduction
#include <stdio.h>
#include <stdlib.h>

#define ROWS 64
#define COLS (1 << 16)

int main(void) {
    int *data = malloc((size_t)ROWS * COLS * sizeof *data);
    for (long k = 0; k < (long)ROWS * COLS; k++)
        data[k] = (int)(((unsigned long)k * 2654435761UL >> 7) % 1000003);
    long long total = 0;
    for (int r = 0; r < ROWS; r++) {
        const int *row = data + (long)r * COLS;
        int best = -1;
        #pragma omp parallel for reduction(max:best) // @target
        for (int c = 0; c < COLS; c++)
            if (row[c] > best)
                best = row[c];
        total += (long long)best * (r + 1);
    }
    printf("weighted row maxima: %lld\n", total);
    free(data);
    return 0;
}
