// Reproducer for kgym_lockup: sum up to a slot past the end of the ring. Slots from KGYM_RING
// (8) on do not exist and must be refused: 8 itself is the boundary an off-by-one check
// (`end > KGYM_RING`, what the 1.5B agent wrote) lets through into the endless loop.
#include "kgym_repro.h"

#define PROC "/proc/kgym_lockup"

static void sum_to(unsigned int end)
{
	static const long ring[8] = { 3, 1, 4, 1, 5, 9, 2, 6 }; // the module's ring at boot
	char cmd[16], want[16];
	long sum = 0;
	unsigned int i;

	for (i = 0; i < end; i++)
		sum += ring[i];
	snprintf(cmd, sizeof(cmd), "%u", end);
	snprintf(want, sizeof(want), "%ld", sum);
	expect_logged(PROC, cmd, MUST_WORK, "kgym_lockup: sum ", want);
}

int main(void)
{
	unsigned int end = pick(1, 7);
	char cmd[16];

	kgym_begin();
	sum_to(end);
	sum_to(1 + (end - 1 + pick(1, 6)) % 7); // another end: no one sum fits both
	run(PROC, "8", MUST_FAIL);
	snprintf(cmd, sizeof(cmd), "%u", pick(9, 100000));
	run(PROC, cmd, MUST_FAIL);
	return kgym_end();
}
