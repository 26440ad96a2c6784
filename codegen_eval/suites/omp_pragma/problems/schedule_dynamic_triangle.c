// category: schedule
#include <stdio.h>
#include <stdlib.h>

#define N 6000

/* Row i costs i+1 operations: a triangular workload. */
int main(void) {
    long *row = malloc(N * sizeof *row);
    #pragma omp parallel for schedule(dynamic) // @target
    for (int i = 0; i < N; i++) {
        long s = 0;
        for (int j = 0; j <= i; j++)
            s += (i ^ j) & 7;
        row[i] = s;
    }
    long long check = 0;
    for (int i = 0; i < N; i++)
        check += row[i] * (i % 17 + 1);
    printf("%lld\n", check);
    free(row);
    return 0;
}
