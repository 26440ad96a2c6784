// Reproducer for kgym_uaf: report on a session after closing it
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_uaf", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_uaf");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd open: %d\n", cmd("open"));
	printf("cmd close: %d\n", cmd("close"));
	printf("cmd stat: %d\n", cmd("stat"));
	return 0;
}
