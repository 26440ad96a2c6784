// Reproducer: set two supplementary groups.
#include <grp.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	gid_t groups[2] = { 5, 6 };

	printf("setgroups: %d\n", setgroups(2, groups));
	return 0;
}
