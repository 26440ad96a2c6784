// Reproducer for kgym_oob: bump counter 6 of a table of 6.
#include "kgym_repro.h"

#define PROC "/proc/kgym_oob"

static struct counter counts[6];

static void bump(unsigned int slot)
{
	char cmd[16], prefix[32];
	const char *got;

	snprintf(cmd, sizeof(cmd), "%u", slot);
	snprintf(prefix, sizeof(prefix), "kgym_oob: slot %u -> ", slot);
	got = run_logged(PROC, cmd, MUST_WORK, prefix);
	if (got)
		expect_next(&counts[slot], atol(got), 1, prefix);
}

int main(void)
{
	unsigned int slot = pick(0, 4), k = pick(2, 3);

	kgym_begin();
	bump(5); // the last slot
	while (k--)
		bump(slot);
	run(PROC, "6", MUST_FAIL);
	return kgym_end();
}
