// Reproducer for kgym_list: register the same handler twice. Reading the file lists the
// registry: a handler registered again must stay on it, once (a "fix" that unlinks it, or
// never links anything, as the 1.5B agent's patches did, is no fix).
#include "kgym_repro.h"

#define PROC "/proc/kgym_list"

int main(void)
{
	kgym_begin();
	run(PROC, "net", FIRST_RUN_WORKS);
	run(PROC, "net", ANY);
	expect_listed_once(PROC, "net");
	run(PROC, "disk", FIRST_RUN_WORKS);
	run(PROC, "net", ANY);
	expect_listed_once(PROC, "net");
	expect_listed_once(PROC, "disk");
	return kgym_end();
}
