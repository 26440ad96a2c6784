// Reproducer for kgym_null: look up a key that is not in the table.
#include "kgym_repro.h"

#define PROC "/proc/kgym_null"

int main(void)
{
	kgym_begin();
	run(PROC, "alpha", MUST_WORK);
	expect_log("kgym_null: alpha -> 2"); // the first run counted it
	run(PROC, "gamma", ANY);
	return kgym_end();
}
