// Reproducer for kgym_ref: fill the buffer with an oversized string
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_ref", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_ref");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd this string is far too long for the buffer: %d\n", cmd("this string is far too long for the buffer"));
	printf("cmd short: %d\n", cmd("short"));
	return 0;
}
