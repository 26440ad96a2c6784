// Reproducer for kgym_div: ask for the mean after a reset.
#include "kgym_repro.h"

#define PROC "/proc/kgym_div"

int main(void)
{
	kgym_begin();
	run(PROC, "add 4", MUST_WORK);
	run(PROC, "add 6", MUST_WORK);
	run(PROC, "avg", MUST_WORK);
	expect_log("kgym_div: avg 5");
	run(PROC, "reset", MUST_WORK);
	run(PROC, "avg", ANY);
	return kgym_end();
}
