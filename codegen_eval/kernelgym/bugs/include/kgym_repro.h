// Shared by the bundled tier-0 reproducers (`#include "kgym_repro.h"`: the gym compiles every
// reproducer with this directory on its include path, and its contents are part of the
// build's cache key).
//
// Besides triggering its bug, a reproducer checks that the module still does its job: a
// MUST_WORK command has to be accepted (write returns its length; FIRST_RUN_WORKS: in the
// boot's first run, before earlier runs changed the module's state), a MUST_FAIL one refused.
// Otherwise it prints KGYM-FUNC-FAIL and exits KGYM_FUNCTION_BROKEN_RC, which the gym scores
// as function_broken: a "fix" that refuses the work is no fix.
#ifndef KGYM_REPRO_H
#define KGYM_REPRO_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// codegen_eval/kernelgym/runner.py: FUNCTION_BROKEN_RC
#define KGYM_FUNCTION_BROKEN_RC 42

enum want { ANY, MUST_WORK, FIRST_RUN_WORKS, MUST_FAIL };
static int first_run, broken;

static int cmd(const char *proc, const char *s)
{
	int fd = open(proc, O_WRONLY);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", proc, strerror(errno));
		return -1;
	}
	int rc = write(fd, s, strlen(s));
	close(fd);
	return rc;
}

static void run(const char *proc, const char *s, enum want want)
{
	int rc = cmd(proc, s);
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

// For modules whose result is only printed: a line the kernel log must hold since boot (read
// from /dev/kmsg, which the gym's init mounts). Missing: KGYM-FUNC-FAIL.
static void expect_log(const char *needle)
{
	char rec[1024];
	int found = 0;
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd < 0) {
		printf("KGYM-FUNC-FAIL cannot read /dev/kmsg: %s\n", strerror(errno));
		broken = 1;
		return;
	}
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);

		if (n < 0 && errno == EPIPE)
			continue; // records overwritten while reading: go on with the next
		if (n <= 0)
			break; // EAGAIN: the end of the log
		rec[n] = 0;
		if (strstr(rec, needle)) {
			found = 1;
			break;
		}
	}
	close(fd);
	if (!found) {
		printf("KGYM-FUNC-FAIL the kernel log lacks \"%s\"\n", needle);
		broken = 1;
	}
}

// For modules that list their state when read: `name` must be on exactly one line of `proc`.
static void expect_listed_once(const char *proc, const char *name)
{
	char buf[4096], *line, *save = NULL;
	int fd = open(proc, O_RDONLY), n, count = 0;

	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n < 0) {
		printf("KGYM-FUNC-FAIL cannot read %s: %s\n", proc, strerror(errno));
		broken = 1;
		return;
	}
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		count += !strcmp(line, name);
	if (count != 1) {
		printf("KGYM-FUNC-FAIL %s lists %s %d times, must be once\n", proc, name, count);
		broken = 1;
	}
}

// For reproducers that check a syscall's result themselves: `ok` false is a KGYM-FUNC-FAIL.
static void expect(int ok, const char *what)
{
	if (!ok) {
		printf("KGYM-FUNC-FAIL %s\n", what);
		broken = 1;
	}
}

// Call first: marks the boot's first run (the initramfs root is fresh on every boot).
static void kgym_begin(void)
{
	int mark = open("/.kgym-func-ran", O_CREAT | O_EXCL | O_WRONLY, 0600);

	first_run = mark >= 0;
	if (mark >= 0)
		close(mark);
}

// main's exit code.
static int kgym_end(void)
{
	fflush(stdout);
	return broken ? KGYM_FUNCTION_BROKEN_RC : 0;
}

#endif
