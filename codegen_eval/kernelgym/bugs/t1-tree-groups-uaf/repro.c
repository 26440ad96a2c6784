// Reproducer: set two supplementary groups, and read them back. The group ids are drawn anew on
// every run (ascending, as getgroups returns them).
#include <grp.h>

#include "kgym_repro.h"

#define N 2

int main(void)
{
	gid_t groups[N], got[8] = { 0 };
	int rc, n, i, same = 1;

	kgym_begin();
	for (i = 0; i < N; i++)
		groups[i] = (i ? groups[i - 1] : 0) + pick(1, 20000);
	rc = setgroups(N, groups);
	printf("setgroups: %d\n", rc);
	expect(rc == 0, "setgroups(2 groups) must succeed");
	n = getgroups(8, got);
	for (i = 0; i < N; i++)
		same &= got[i] == groups[i];
	expect(n == N && same, "getgroups must return the two groups set");
	return kgym_end();
}
