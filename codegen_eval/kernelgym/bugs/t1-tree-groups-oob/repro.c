// Reproducer: set three supplementary groups.
#include <grp.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	gid_t groups[3] = { 10, 20, 30 };

	printf("setgroups: %d\n", setgroups(3, groups));
	return 0;
}
