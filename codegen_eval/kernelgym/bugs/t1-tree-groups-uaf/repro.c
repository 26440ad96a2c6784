// Reproducer: set two supplementary groups, and read them back.
#include <grp.h>

#include "kgym_repro.h"

int main(void)
{
	gid_t groups[2] = { 5, 6 }, got[8] = { 0 };
	int rc, n;

	kgym_begin();
	rc = setgroups(2, groups);
	printf("setgroups: %d\n", rc);
	expect(rc == 0, "setgroups(2, {5, 6}) must succeed");
	n = getgroups(8, got);
	expect(n == 2 && got[0] == 5 && got[1] == 6, "getgroups must return the two groups set");
	return kgym_end();
}
