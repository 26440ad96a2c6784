// Reproducer for kgym_uaf: report on a session after closing it.
#include "kgym_repro.h"

#define PROC "/proc/kgym_uaf"

int main(void)
{
	struct counter ids = { 0 };
	unsigned int k = pick(2, 4);

	kgym_begin();
	while (k--) { // sessions are numbered from 1 at boot
		const char *got;

		run(PROC, "open", MUST_WORK);
		got = run_logged(PROC, "stat", MUST_WORK, "kgym_uaf: session ");
		if (!got)
			continue;
		expect_next(&ids, atol(got), 1, "the session number");
		expect(strchr(got, ',') && !strcmp(strchr(got, ','), ", 0 bytes"),
		       "a new session must report 0 bytes");
	}
	run(PROC, "close", MUST_WORK);
	// The trigger: a fix may accept or refuse it, but a closed session reports nothing.
	expect_unlogged(PROC, "stat", ANY, "kgym_uaf: session ");
	return kgym_end();
}
