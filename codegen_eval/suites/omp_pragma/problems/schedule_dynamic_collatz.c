// category: schedule
#include <stdio.h>

#define LIMIT 400000

/* Trajectory lengths vary wildly from one start value to the next. */
int main(void) {
    long long long_ones = 0;
    #pragma omp parallel for schedule(dynamic) reduction(+:long_ones) // @target
    for (long n = 1; n < LIMIT; n++) {
        long x = n, steps = 0;
        while (x != 1) {
            x = (x & 1) ? 3 * x + 1 : x / 2;
            steps++;
        }
        if (steps > 150)
            long_ones++;
    }
    printf("start values with more than 150 steps: %lld\n", long_ones);
    return 0;
}
