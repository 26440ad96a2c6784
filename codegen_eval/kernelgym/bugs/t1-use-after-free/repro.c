// Reproducer for kgym_uaf: report on a session after closing it.
#include "kgym_repro.h"

#define PROC "/proc/kgym_uaf"

int main(void)
{
	kgym_begin();
	run(PROC, "open", MUST_WORK);
	run(PROC, "stat", MUST_WORK);
	expect_log("kgym_uaf: session 1, 0 bytes"); // the boot's first session
	run(PROC, "close", MUST_WORK);
	run(PROC, "stat", ANY);
	return kgym_end();
}
