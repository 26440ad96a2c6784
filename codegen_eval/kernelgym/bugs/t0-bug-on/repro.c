// Reproducer for kgym_bugon: push more values than the stack holds.
#include "kgym_repro.h"

#define PROC "/proc/kgym_bugon"

int main(void)
{
	kgym_begin();
	run(PROC, "1", FIRST_RUN_WORKS);
	run(PROC, "2", FIRST_RUN_WORKS);
	run(PROC, "3", FIRST_RUN_WORKS);
	run(PROC, "4", FIRST_RUN_WORKS);
	run(PROC, "5", ANY);
	run(PROC, "6", ANY);
	return kgym_end();
}
