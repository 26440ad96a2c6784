// Reproducer for kgym_warn: start the device twice without a stop.
#include "kgym_repro.h"

#define PROC "/proc/kgym_warn"

int main(void)
{
	kgym_begin();
	run(PROC, "stop", MUST_WORK);
	run(PROC, "start", MUST_WORK);
	run(PROC, "stop", MUST_WORK);
	run(PROC, "start", MUST_WORK);
	run(PROC, "start", ANY);
	return kgym_end();
}
