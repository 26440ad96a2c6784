/* The census of hpck_host: at every stop, every process of the candidate's uid must be one
 * the host knows (itself, its ancestors, the launcher, the admitted guests). Processes of
 * other uids belong to the sandbox: a candidate cannot change its uid. The ancestors are read
 * once, before any candidate process exists, so a candidate cannot pose as one later. */
#ifndef HPCK_CENSUS_H
#define HPCK_CENSUS_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static pid_t census_ancestors[64];
static int census_n_ancestors;
static int census_session_only; /* no PID namespace of our own: see census_init */

static pid_t census_parent_of(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) return 0;
    buf[r] = 0;
    char *rp = strrchr(buf, ')');
    int ppid = 0;
    if (!rp || sscanf(rp + 2, "%*c %d", &ppid) != 1) return 0;
    return (pid_t)ppid;
}

/* Read the host's ancestors (the sandbox's init and launcher) and how far /proc reaches. */
static void census_init(void) {
    for (pid_t p = getppid(); p > 0 && census_n_ancestors < 64; p = census_parent_of(p))
        census_ancestors[census_n_ancestors++] = p;
    /* bwrap and docker give every exec a PID namespace of its own (NSpid lists two pids or
     * more), so every process of our uid in /proc is this exec's. Without one (the
     * `unsafe-local` backend) other runs of the same uid are visible: count only our own
     * session (every backend starts an exec in a new session). */
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    int levels = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "NSpid:", 6) != 0) continue;
        for (char *t = strtok(line + 6, " \t\n"); t; t = strtok(NULL, " \t\n")) ++levels;
        break;
    }
    if (f) fclose(f);
    census_session_only = levels < 2;
}

static uid_t census_uid_of(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    unsigned uid = (unsigned)-1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Uid: %u", &uid) == 1) break;
    if (f) fclose(f);
    return (uid_t)uid;
}

/* The first process of our uid that is neither in `known` nor one of our ancestors: its pid,
 * 0 if there is none, -1 if /proc cannot be read. Threads are not listed in /proc. */
static pid_t census_stranger(const pid_t *known, int n_known) {
    DIR *d = opendir("/proc");
    if (!d) return -1;
    struct dirent *e;
    const uid_t me = getuid();
    const pid_t my_sid = getsid(0);
    pid_t found = 0;
    while (!found && (e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        int ok = 0;
        for (int i = 0; i < n_known && !ok; ++i) ok = known[i] == (pid_t)pid;
        for (int i = 0; i < census_n_ancestors && !ok; ++i) ok = census_ancestors[i] == (pid_t)pid;
        if (ok || census_uid_of((pid_t)pid) != me) continue;
        if (census_session_only && getsid((pid_t)pid) != my_sid) continue;
        found = (pid_t)pid;
    }
    closedir(d);
    return found;
}

/* CPU time a process's threads have run, in ns (the first field of each thread's schedstat;
 * 0 where the kernel has none). A stopped process's figure stands still. */
static unsigned long long census_run_ns(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    unsigned long long sum = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char sp[512];
        snprintf(sp, sizeof sp, "%s/%s/schedstat", path, e->d_name);
        FILE *f = fopen(sp, "re");
        unsigned long long ns = 0;
        if (f && fscanf(f, "%llu", &ns) == 1) sum += ns;
        if (f) fclose(f);
    }
    if (d) closedir(d);
    return sum;
}

#endif
