/* TCP connections of a candidate process: to the PMIx server only (hpck_guard).
 *
 * mpirun listens on two loopback TCP ports: its PMIx server, which every rank needs, and its
 * own out-of-band channel (ORTE's OOB, whose URI mpirun even hands the ranks in
 * OMPI_MCA_orte_hnp_uri). That channel takes daemon commands with no authentication beyond
 * the uid: "signal the local processes" with SIGCONT would continue ranks the host holds
 * stopped, "add local processes" would launch programs. A rank has no business there: the
 * MPI traffic goes over shared memory (btl self,vader). So the guard adds a Landlock domain
 * (network rules: ABI 4, Linux 6.7) in which a TCP connect may reach only the ports named by
 * mpirun's PMIX_SERVER_URI* variables, read here before any candidate code runs; a process
 * without them (serial, OpenMP, the baseline) may connect nowhere. */
#ifndef HPCK_NETCONFINE_H
#define HPCK_NETCONFINE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock's network ABI (older libc headers lack it) */
#define NETCONFINE_RULE_NET_PORT 2
#define NETCONFINE_ACCESS_CONNECT_TCP (1ull << 1)

struct netconfine_port_attr {
    uint64_t allowed_access;
    uint64_t port;
} __attribute__((packed));

/* The ports of every PMIX_SERVER_URI* in `envp` ("<nspace>.<rank>;tcp4://127.0.0.1:PORT"). */
static int netconfine_pmix_ports(char **envp, uint16_t *ports, int max) {
    int n = 0;
    for (char **e = envp; *e && n < max; ++e) {
        if (strncmp(*e, "PMIX_SERVER_URI", 15) != 0 || !strstr(*e, "tcp")) continue;
        const char *colon = strrchr(*e, ':');
        char *end;
        long port = colon ? strtol(colon + 1, &end, 10) : 0;
        if (colon && *end == 0 && port > 0 && port < 65536) ports[n++] = (uint16_t)port;
    }
    return n;
}

/* 1 if the domain is in force, 0 where the kernel has no Landlock network rules (then only
 * the host's checks stand), -1 on failure. */
static int netconfine_tcp(char **envp) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* ..._VERSION */);
    if (abi < 4) return 0;
    struct {
        uint64_t handled_access_fs, handled_access_net;
    } attr = {0, NETCONFINE_ACCESS_CONNECT_TCP};
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (fd < 0) return -1;
    uint16_t ports[8];
    const int n = netconfine_pmix_ports(envp, ports, 8);
    for (int i = 0; i < n; ++i) {
        struct netconfine_port_attr rule = {NETCONFINE_ACCESS_CONNECT_TCP, ports[i]};
        if (syscall(SYS_landlock_add_rule, fd, NETCONFINE_RULE_NET_PORT, &rule, 0) != 0) {
            close(fd);
            return -1;
        }
    }
    const int rc = (int)syscall(SYS_landlock_restrict_self, fd, 0);
    close(fd);
    return rc == 0 ? 1 : -1;
}

#endif
