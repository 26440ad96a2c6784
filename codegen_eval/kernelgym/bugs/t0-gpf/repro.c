// Reproducer for kgym_gpf: pop a job and peek at the next one
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_gpf", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_gpf");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd pop: %d\n", cmd("pop"));
	return 0;
}
