// Reproducer for kgym_ref: fill the buffer with an oversized string.
#include "kgym_repro.h"

#define PROC "/proc/kgym_ref"

int main(void)
{
	unsigned int n = pick(3, 20), i;
	char s[32];

	kgym_begin();
	for (i = 0; i < n; i++)
		s[i] = 'a' + pick(0, 25);
	s[n] = 0;
	run(PROC, "this string is far too long for the buffer", ANY);
	expect_logged(PROC, s, MUST_WORK, "kgym_ref: stored ", s);
	return kgym_end();
}
