// Reproducer for kgym_null: look up a key that is not in the table.
#include "kgym_repro.h"

#define PROC "/proc/kgym_null"

int main(void)
{
	static const char *keys[] = { "alpha", "beta" };
	static const long initial[] = { 1, 2 }; // the table's values at boot
	struct counter counts[2] = { 0 };
	unsigned int left[2];

	kgym_begin();
	// Each key counted a few times, in a random order: the log must show each count.
	left[0] = pick(2, 4);
	left[1] = pick(2, 4);
	while (left[0] + left[1]) {
		int k = left[0] && (!left[1] || pick(0, 1)) ? 0 : 1;
		char prefix[32];
		const char *got;

		snprintf(prefix, sizeof(prefix), "kgym_null: %s -> ", keys[k]);
		got = run_logged(PROC, keys[k], MUST_WORK, prefix);
		left[k]--;
		if (got)
			expect_next(&counts[k], atol(got), initial[k] + 1, prefix);
	}
	run(PROC, "gamma", ANY);
	return kgym_end();
}
