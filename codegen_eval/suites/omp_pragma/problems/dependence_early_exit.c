// category: dependence
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 22)

/* The first index whose value matches: the loop stops there. */
int main(void) {
    int *v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++)
        v[i] = (int)(((unsigned)i * 2654435761u) >> 12);
    int found = -1;
    // @target none
    for (int i = 0; i < N; i++) {
        if (v[i] % 100003 == 4242) {
            found = i;
            break;
        }
    }
    printf("first match at %d\n", found);
    free(v);
    return 0;
}
