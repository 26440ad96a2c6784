// Reproducer for kgym_df: release the buffer twice with invalid sizes
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_df", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_df");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

int main(void)
{
	printf("cmd 64: %d\n", cmd("64"));
	printf("cmd 0: %d\n", cmd("0"));
	printf("cmd 0: %d\n", cmd("0"));
	return 0;
}
