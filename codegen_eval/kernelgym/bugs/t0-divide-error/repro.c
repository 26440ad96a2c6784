// Reproducer for kgym_div: ask for the mean after a reset.
#include "kgym_repro.h"

#define PROC "/proc/kgym_div"

int main(void)
{
	unsigned int n = pick(2, 5), i;
	unsigned long sum = 0;
	char cmd[32], mean[32];

	kgym_begin();
	run(PROC, "reset", MUST_WORK);
	for (i = 0; i < n; i++) {
		unsigned int v = pick(100, 999);

		sum += v;
		snprintf(cmd, sizeof(cmd), "add %u", v);
		run(PROC, cmd, MUST_WORK);
	}
	snprintf(mean, sizeof(mean), "%lu", sum / n);
	expect_logged(PROC, "avg", MUST_WORK, "kgym_div: avg ", mean);
	run(PROC, "reset", MUST_WORK);
	run(PROC, "avg", ANY);
	return kgym_end();
}
