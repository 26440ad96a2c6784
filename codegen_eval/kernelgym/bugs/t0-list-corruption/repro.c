// Reproducer for kgym_list: register the same handler twice
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_list", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_list");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd net: %d\n", cmd("net"));
	printf("cmd disk: %d\n", cmd("disk"));
	printf("cmd net: %d\n", cmd("net"));
	return 0;
}
