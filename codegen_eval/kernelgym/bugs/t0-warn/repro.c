// Reproducer for kgym_warn: start the device twice without a stop
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_warn", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_warn");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd start: %d\n", cmd("start"));
	printf("cmd stop: %d\n", cmd("stop"));
	printf("cmd start: %d\n", cmd("start"));
	printf("cmd start: %d\n", cmd("start"));
	return 0;
}
