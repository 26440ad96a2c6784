// category: critical
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 23)

/* Values that pass the filter are appended to a shared list (two dependent updates). */
int main(void) {
    int *list = malloc(N * sizeof *list);
    int count = 0;
    #pragma omp parallel for
    for (int i = 0; i < N; i++) {
        int v = (int)(((unsigned)i * 40503u) % 10007u);
        if (v % 3 == 0) {
            #pragma omp critical // @target
            {
                list[count] = v;
                count++;
            }
        }
    }
    long long sum = 0;
    for (int k = 0; k < count; k++)
        sum += list[k];
    printf("count %d sum %lld\n", count, sum);
    free(list);
    return 0;
}
