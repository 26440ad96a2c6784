// Reproducer for kgym_lockup: sum up to a slot past the end of the ring.
#include "kgym_repro.h"

#define PROC "/proc/kgym_lockup"

int main(void)
{
	kgym_begin();
	run(PROC, "3", MUST_WORK);
	run(PROC, "9", ANY);
	return kgym_end();
}
