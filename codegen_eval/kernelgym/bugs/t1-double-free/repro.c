// Reproducer for kgym_df: an invalid resize frees the buffer, the next one frees it again.
#include "kgym_repro.h"

#define PROC "/proc/kgym_df"

static void resize(void)
{
	char size[16];

	snprintf(size, sizeof(size), "%u", pick(1, 4096));
	expect_logged(PROC, size, MUST_WORK, "kgym_df: size ", size);
}

int main(void)
{
	kgym_begin();
	resize();
	run(PROC, "0", ANY);
	run(PROC, "0", ANY);
	resize(); // still usable afterwards
	return kgym_end();
}
