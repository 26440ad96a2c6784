// Reproducer for kgym_lockup: sum up to a slot past the end of the ring.
// It also checks that the module still does its job: a MUST_WORK command has to be accepted
// (write returns its length; FIRST_RUN_WORKS: in the boot's first run, before earlier runs
// changed the module's state), a MUST_FAIL one refused. Otherwise it prints KGYM-FUNC-FAIL and
// exits 42, which the gym scores as function_broken: a "fix" that refuses the work is no fix.
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum want { ANY, MUST_WORK, FIRST_RUN_WORKS, MUST_FAIL };
static int first_run, broken;

static int cmd(const char *s)
{
	int fd = open("/proc/kgym_lockup", O_WRONLY);
	if (fd < 0) {
		perror("open /proc/kgym_lockup");
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

static void run(const char *s, enum want want)
{
	int rc = cmd(s);
	int accepted = rc == (int)strlen(s);
	printf("cmd %s: %d\n", s, rc);
	fflush(stdout);
	if ((want == MUST_WORK || (want == FIRST_RUN_WORKS && first_run)) && !accepted) {
		printf("KGYM-FUNC-FAIL cmd %s returned %d, must be accepted\n", s, rc);
		broken = 1;
	}
	if (want == MUST_FAIL && rc >= 0) {
		printf("KGYM-FUNC-FAIL cmd %s returned %d, must be refused\n", s, rc);
		broken = 1;
	}
}

int main(void)
{
	int mark = open("/.kgym-func-ran", O_CREAT | O_EXCL | O_WRONLY, 0600);

	first_run = mark >= 0;
	if (mark >= 0)
		close(mark);
	run("3", MUST_WORK);
	run("9", ANY);
	fflush(stdout);
	return broken ? 42 : 0;
}
