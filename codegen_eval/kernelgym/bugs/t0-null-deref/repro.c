// Reproducer for kgym_null: look up a key that is not in the table
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_null", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_null");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd alpha: %d\n", cmd("alpha"));
	printf("cmd gamma: %d\n", cmd("gamma"));
	return 0;
}
