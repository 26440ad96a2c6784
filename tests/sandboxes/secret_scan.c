/* A hostile payload looking for a value it was never handed directly: it knows only the name
 * of an environment variable ($SECRET_NAME) whose value the harness gave to exec(), and
 * searches every place a payload can reach for that value:
 *   - /proc/<pid>/cmdline and /proc/<pid>/environ of every visible process but itself;
 *   - the readable memory of every other visible process (/proc/<pid>/mem via maps), the
 *     channel bwrap's own pid 1 used to leak through (its heap held every --setenv value);
 *   - every open file descriptor of every visible process (/proc/<pid>/fd/<n>) and its own
 *     inherited descriptors, read from offset 0 (a leaked --args or seccomp memfd, ...);
 *   - and it tries to write into pid 1's stdout through /proc/1/fd/1.
 * It prints one line per finding: "FOUND <pid> <where>", "ENV <pid>" when the value is
 * in that process's environment block (the payload's own environment, which is allowed), and
 * "ROOT-FD-WRITE" if the write through /proc/1/fd/1 worked. The caller decides what is a leak.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *secret;
static size_t secret_len;

static int contains(const char *buf, size_t n) {
    return n >= secret_len && memmem(buf, n, secret, secret_len) != NULL;
}

/* Whole small file (or the first 4 MiB) into a static buffer. */
static char buf[4 << 20];
static ssize_t slurp(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t total = 0, n;
    while (total < (ssize_t)sizeof buf && (n = read(fd, buf + total, sizeof buf - total)) > 0)
        total += n;
    close(fd);
    return total;
}

static int scan_mem(int pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *maps = fopen(path, "re");
    if (!maps) return 0;
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int mem = open(path, O_RDONLY | O_CLOEXEC);
    int found = 0;
    char line[512];
    while (mem >= 0 && !found && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r') continue;
        for (unsigned long a = lo; a < hi && !found; a += sizeof buf) {
            size_t want = hi - a < sizeof buf ? hi - a : sizeof buf;
            ssize_t n = pread(mem, buf, want, (off_t)a);
            if (n > 0 && contains(buf, (size_t)n)) found = 1;
        }
    }
    if (mem >= 0) close(mem);
    fclose(maps);
    return found;
}

static void scan_fds(int pid, int self) {
    char dir[64], path[300];
    snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        /* Regular files and memfds only: reading someone's pipe or FIFO would steal data. */
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        ssize_t n = slurp(path);
        if (n > 0 && contains(buf, (size_t)n))
            printf("FOUND %d fd/%s%s\n", pid, e->d_name, pid == self ? " (own)" : "");
    }
    closedir(d);
}

int main(void) {
    const char *name = getenv("SECRET_NAME");
    if (!name || !(secret = getenv(name))) {
        puts("no secret given");
        return 2;
    }
    secret_len = strlen(secret);
    int self = getpid(), procs = 0;
    DIR *proc = opendir("/proc");
    struct dirent *e;
    while ((e = readdir(proc))) {
        int pid = atoi(e->d_name);
        if (pid <= 0) continue;
        procs++;
        char path[64];
        if (pid != self) {
            snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
            ssize_t n = slurp(path);
            if (n > 0 && contains(buf, (size_t)n)) printf("FOUND %d cmdline\n", pid);
            snprintf(path, sizeof path, "/proc/%d/environ", pid);
            n = slurp(path);
            int in_env = n > 0 && contains(buf, (size_t)n);
            if (in_env) printf("ENV %d\n", pid);
            if (scan_mem(pid)) printf("FOUND %d mem%s\n", pid, in_env ? " (its env)" : "");
        }
        scan_fds(pid, self);
    }
    closedir(proc);
    int fd = open("/proc/1/fd/1", O_WRONLY | O_CLOEXEC);
    if (fd >= 0 && write(fd, "", 0) == 0) puts("ROOT-FD-WRITE");
    printf("scanned %d processes\n", procs);
    return 0;
}
