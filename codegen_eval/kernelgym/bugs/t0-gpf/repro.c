// Reproducer for kgym_gpf: pop a job and peek at the next one.
#include "kgym_repro.h"

#define PROC "/proc/kgym_gpf"

int main(void)
{
	kgym_begin();
	run(PROC, "pop", MUST_WORK);
	return kgym_end();
}
