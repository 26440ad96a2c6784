// Reproducer for kgym_df: an invalid resize frees the buffer, the next one frees it again.
#include "kgym_repro.h"

#define PROC "/proc/kgym_df"

int main(void)
{
	kgym_begin();
	run(PROC, "64", MUST_WORK);
	expect_log("kgym_df: size 64");
	run(PROC, "0", ANY);
	run(PROC, "0", ANY);
	run(PROC, "128", MUST_WORK); // still usable afterwards
	expect_log("kgym_df: size 128");
	return kgym_end();
}
