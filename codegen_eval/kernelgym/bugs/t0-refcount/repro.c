// Reproducer for kgym_ref: fill the buffer with an oversized string.
#include "kgym_repro.h"

#define PROC "/proc/kgym_ref"

int main(void)
{
	kgym_begin();
	run(PROC, "this string is far too long for the buffer", ANY);
	run(PROC, "short", MUST_WORK);
	expect_log("kgym_ref: stored short");
	return kgym_end();
}
