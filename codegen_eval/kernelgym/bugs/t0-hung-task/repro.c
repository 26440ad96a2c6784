// Reproducer for kgym_hung: write an invalid value, then a valid one
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_hung", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_hung");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd -1: %d\n", cmd("-1"));
	printf("cmd 7: %d\n", cmd("7"));
	return 0;
}
