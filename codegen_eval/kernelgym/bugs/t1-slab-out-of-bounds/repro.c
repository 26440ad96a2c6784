// Reproducer for kgym_oob: bump the counter one past the last slot
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_oob", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_oob");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd 0: %d\n", cmd("0"));
	printf("cmd 5: %d\n", cmd("5"));
	printf("cmd 6: %d\n", cmd("6"));
	return 0;
}
