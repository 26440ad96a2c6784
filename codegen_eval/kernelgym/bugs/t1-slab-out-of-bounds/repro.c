// Reproducer for kgym_oob: bump counter 6 of a table of 6.
#include "kgym_repro.h"

#define PROC "/proc/kgym_oob"

int main(void)
{
	kgym_begin();
	run(PROC, "0", MUST_WORK);
	run(PROC, "5", MUST_WORK);
	expect_log("kgym_oob: slot 5 -> 1"); // the boot's first bump of the last slot
	run(PROC, "6", MUST_FAIL);
	return kgym_end();
}
