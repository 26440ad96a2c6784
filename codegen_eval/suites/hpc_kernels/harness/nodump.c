/* Preloaded into the launcher (mpirun) and every process it starts: mark the process not
 * dumpable, so a process of the same uid (candidate code) can neither open its /proc/<pid>/mem,
 * environ or fd/ nor attach to it. An execve resets the flag, so each new image sets it
 * again from this constructor. */
#include <sys/prctl.h>

__attribute__((constructor(101))) static void hpck_nodump(void) { prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
