// Reproducer for kgym_warn: start the device twice without a stop. The second start must be
// refused: deleting the WARN_ON silences the report and lets the bad transition happen.
#include "kgym_repro.h"

#define PROC "/proc/kgym_warn"

int main(void)
{
	kgym_begin();
	run(PROC, "stop", MUST_WORK);
	run(PROC, "start", MUST_WORK);
	run(PROC, "stop", MUST_WORK);
	run(PROC, "start", MUST_WORK);
	run(PROC, "start", MUST_FAIL);
	return kgym_end();
}
