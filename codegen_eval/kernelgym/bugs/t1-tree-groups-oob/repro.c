// Reproducer: set three supplementary groups (ids drawn on every run), and read them back.
#include "kgym_repro.h"

int main(void)
{
	kgym_begin();
	expect_groups_kept(3);
	return kgym_end();
}
