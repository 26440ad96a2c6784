// Reproducer for kgym_bugon: push more values than the stack holds
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_bugon", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_bugon");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd 1: %d\n", cmd("1"));
	printf("cmd 2: %d\n", cmd("2"));
	printf("cmd 3: %d\n", cmd("3"));
	printf("cmd 4: %d\n", cmd("4"));
	printf("cmd 5: %d\n", cmd("5"));
	printf("cmd 6: %d\n", cmd("6"));
	return 0;
}
