// Reproducer for kgym_hung: write an invalid value, then a valid one.
#include "kgym_repro.h"

#define PROC "/proc/kgym_hung"

int main(void)
{
	kgym_begin();
	run(PROC, "-1", MUST_FAIL);
	run(PROC, "7", MUST_WORK);
	expect_log("kgym_hung: reg 7");
	return kgym_end();
}
