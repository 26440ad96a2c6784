// Reproducer for kgym_hung: write an invalid value, then a valid one.
#include "kgym_repro.h"

#define PROC "/proc/kgym_hung"

int main(void)
{
	char v[16];

	kgym_begin();
	snprintf(v, sizeof(v), "%u", pick(100, 99999));
	run(PROC, "-1", MUST_FAIL);
	expect_logged(PROC, v, MUST_WORK, "kgym_hung: reg ", v);
	return kgym_end();
}
