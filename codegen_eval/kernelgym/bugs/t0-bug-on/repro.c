// Reproducer for kgym_bugon: push more values than the stack holds. A push on the full stack
// must be refused: dropping the value and reporting success (what a small model wrote) loses
// data silently.
#include "kgym_repro.h"

#define PROC "/proc/kgym_bugon"

int main(void)
{
	kgym_begin();
	run(PROC, "1", FIRST_RUN_WORKS);
	run(PROC, "2", FIRST_RUN_WORKS);
	run(PROC, "3", FIRST_RUN_WORKS);
	run(PROC, "4", FIRST_RUN_WORKS);
	run(PROC, "5", MUST_FAIL);
	run(PROC, "6", MUST_FAIL);
	return kgym_end();
}
