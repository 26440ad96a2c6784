// Reproducer for kgym_div: ask for the mean after a reset
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_div", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_div");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd add 4: %d\n", cmd("add 4"));
	printf("cmd add 6: %d\n", cmd("add 6"));
	printf("cmd avg: %d\n", cmd("avg"));
	printf("cmd reset: %d\n", cmd("reset"));
	printf("cmd avg: %d\n", cmd("avg"));
	return 0;
}
