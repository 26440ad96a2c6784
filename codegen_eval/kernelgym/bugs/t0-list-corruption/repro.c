// Reproducer for kgym_list: register the same handler twice.
#include "kgym_repro.h"

#define PROC "/proc/kgym_list"

int main(void)
{
	kgym_begin();
	run(PROC, "net", FIRST_RUN_WORKS);
	run(PROC, "disk", FIRST_RUN_WORKS);
	run(PROC, "net", ANY);
	return kgym_end();
}
