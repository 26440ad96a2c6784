// Reproducer for kgym_lockup: sum up to a slot past the end of the ring. Slots from KGYM_RING
// (8) on do not exist and must be refused: 8 itself is the boundary an off-by-one check
// (`end > KGYM_RING`, what the 1.5B agent wrote) lets through into the endless loop.
#include "kgym_repro.h"

#define PROC "/proc/kgym_lockup"

int main(void)
{
	kgym_begin();
	run(PROC, "3", MUST_WORK);
	expect_log("kgym_lockup: sum 8"); // 3 + 1 + 4
	run(PROC, "8", MUST_FAIL);
	run(PROC, "9", MUST_FAIL);
	return kgym_end();
}
