// Reproducer: set three supplementary groups, and read them back.
#include <grp.h>

#include "kgym_repro.h"

int main(void)
{
	gid_t groups[3] = { 10, 20, 30 }, got[8] = { 0 };
	int rc, n;

	kgym_begin();
	rc = setgroups(3, groups);
	printf("setgroups: %d\n", rc);
	expect(rc == 0, "setgroups(3, {10, 20, 30}) must succeed");
	n = getgroups(8, got);
	expect(n == 3 && got[0] == 10 && got[1] == 20 && got[2] == 30,
	       "getgroups must return the three groups set");
	return kgym_end();
}
