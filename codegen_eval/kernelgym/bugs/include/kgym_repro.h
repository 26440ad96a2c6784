// Shared by the bundled reproducers, tier 0 and tier 1 (`#include "kgym_repro.h"`: the gym compiles every
// reproducer with this directory on its include path, and its contents are part of the
// build's cache key).
//
// Besides triggering its bug, a reproducer checks that the module still does its job: a
// MUST_WORK command has to be accepted (write returns its length; FIRST_RUN_WORKS: in the
// boot's first run, before earlier runs changed the module's state), a MUST_FAIL one refused.
// Otherwise it prints KGYM-FUNC-FAIL and exits KGYM_FUNCTION_BROKEN_RC, which the gym scores
// as function_broken: a "fix" that refuses the work is no fix.
//
// Where the module reports its work in the kernel log, the reproducer picks its inputs at
// random on every run (pick) and checks the one line the command added (run_logged): the
// expected lines differ from run to run, so a patch that prints what an earlier run expected
// (the KGYM-FUNC-FAIL line is in the feedback a repairing agent reads), or sprays every
// possible line, fails; to pass, the module has to do the work.
#ifndef KGYM_REPRO_H
#define KGYM_REPRO_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
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

// A number in [lo, hi], drawn anew on every run. Early in boot the kernel's generator may not
// be ready (getrandom would block): the clock and a counter stand in, which a patch written
// beforehand cannot predict either.
static unsigned int pick(unsigned int lo, unsigned int hi)
{
	static unsigned int calls;
	unsigned int r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = ((unsigned int)ts.tv_nsec ^ (unsigned int)getpid() << 16) * 2654435761u;
		r ^= ++calls * 40503u;
	}
	return lo + r % (hi - lo + 1);
}

// Runs `s` like run(), then reads the kernel log records the command added (from /dev/kmsg,
// which the gym's init mounts) and counts those that start with `prefix`; the text after the
// prefix of the first is left in *found (valid until the next call). -1: the log is unreadable
// (KGYM-FUNC-FAIL already printed).
static int run_count_logged(const char *proc, const char *s, enum want want, const char *prefix,
			    const char **found)
{
	static char first[256];
	char rec[1024];
	int count = 0, fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	*found = NULL;
	if (fd < 0) {
		printf("KGYM-FUNC-FAIL cannot read /dev/kmsg: %s\n", strerror(errno));
		broken = 1;
		run(proc, s, want);
		return -1;
	}
	lseek(fd, 0, SEEK_END); // only what the command adds
	run(proc, s, want);
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		char *msg, *end;

		if (n < 0 && errno == EPIPE)
			continue; // records overwritten while reading: go on with the next
		if (n <= 0)
			break; // EAGAIN: the end of the log
		rec[n] = 0;
		msg = strchr(rec, ';'); // "prio,seq,usec,flags;message\n"
		if (!msg)
			continue;
		msg++;
		end = strchr(msg, '\n');
		if (end)
			*end = 0;
		if (strncmp(msg, prefix, strlen(prefix)))
			continue;
		if (++count == 1) {
			snprintf(first, sizeof(first), "%s", msg + strlen(prefix));
			*found = first;
		}
	}
	close(fd);
	return count;
}

// Exactly one record the command added must start with `prefix`: the text after the prefix
// is returned (valid until the next call). None, or several: KGYM-FUNC-FAIL, NULL.
static const char *run_logged(const char *proc, const char *s, enum want want, const char *prefix)
{
	const char *found;
	int count = run_count_logged(proc, s, want, prefix, &found);

	if (count < 0)
		return NULL;
	if (count != 1) {
		printf("KGYM-FUNC-FAIL cmd %s logged %d lines starting \"%s\", must be one\n", s,
		       count, prefix);
		broken = 1;
		return NULL;
	}
	return found;
}

// The command must add no record starting with `prefix`: what it reports on is gone (a
// "close" that kept the session is no fix of what came after the close).
static void expect_unlogged(const char *proc, const char *s, enum want want, const char *prefix)
{
	const char *found;
	int count = run_count_logged(proc, s, want, prefix, &found);

	if (count > 0) {
		printf("KGYM-FUNC-FAIL cmd %s logged \"%s%s\", must log nothing\n", s, prefix, found);
		broken = 1;
	}
}

// run_logged, and the line must read `prefix` followed by exactly `want_text`.
static void expect_logged(const char *proc, const char *s, enum want want, const char *prefix,
			  const char *want_text)
{
	const char *got = run_logged(proc, s, want, prefix);

	if (got && strcmp(got, want_text)) {
		printf("KGYM-FUNC-FAIL cmd %s logged \"%s%s\", must be \"%s%s\"\n", s, prefix, got,
		       prefix, want_text);
		broken = 1;
	}
}

// A count the module reports: each report must be one more than the one before; the first
// must be `first` in the boot's first run (a later run goes on from where the state is).
struct counter {
	long last;
	int seen;
};

static void expect_next(struct counter *c, long got, long first, const char *what)
{
	long want = c->seen ? c->last + 1 : first_run ? first : got;

	if (got != want) {
		printf("KGYM-FUNC-FAIL %s reported %ld, must be %ld\n", what, got, want);
		broken = 1;
	}
	c->last = got;
	c->seen = 1;
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

// For the supplementary-group bugs: set `n` (at most 8) group ids drawn on this run, in
// ascending order as getgroups returns them, and read them back.
static void expect_groups_kept(int n)
{
	gid_t groups[8], got[8] = { 0 };
	int rc, i, same = 1;

	for (i = 0; i < n; i++)
		groups[i] = (i ? groups[i - 1] : 0) + pick(1, 20000);
	rc = setgroups(n, groups);
	printf("setgroups: %d\n", rc);
	expect(rc == 0, "setgroups must succeed");
	rc = getgroups(8, got);
	for (i = 0; i < n; i++)
		same &= got[i] == groups[i];
	expect(rc == n && same, "getgroups must return the groups set");
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
