// Reproducer for kgym_gpf: pop a job and peek at the next one, which must be job 1 (a "fix"
// that reports the popped job 0 instead, as the 1.5B agent wrote, is no fix).
#include "kgym_repro.h"

#define PROC "/proc/kgym_gpf"

int main(void)
{
	kgym_begin();
	run(PROC, "pop", MUST_WORK);
	expect_log("kgym_gpf: next job 1");
	return kgym_end();
}
