// Reproducer for kgym_lockup: sum up to a slot past the end of the ring
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_lockup", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_lockup");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd 3: %d\n", cmd("3"));
	printf("cmd 9: %d\n", cmd("9"));
	return 0;
}
