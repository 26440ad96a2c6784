// Reproducer for kgym_gpf: pop a job and peek at the next one, which must be job 1 (a "fix"
// that reports the popped job 0 instead, as the 1.5B agent wrote, is no fix). Every write
// refills the queue with the same jobs, so this answer is a constant.
#include "kgym_repro.h"

#define PROC "/proc/kgym_gpf"

int main(void)
{
	kgym_begin();
	expect_logged(PROC, "pop", MUST_WORK, "kgym_gpf: next job ", "1");
	return kgym_end();
}
