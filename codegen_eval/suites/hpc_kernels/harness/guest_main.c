/* The guest runtime, linked with the candidate: map the arena the host hands over, then call
 * the candidate once per GO and answer DONE. It decides nothing and measures nothing, so
 * nothing here is worth forging: a candidate that rewrites this code can only make its own
 * run fail or look slower. Compiled as C (serial, OpenMP, MPI) or as CUDA C++ (nvcc). */
#include "hpck.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef HPCK_FAMILY_MPI
#include <mpi.h>
#endif
#ifdef HPCK_FAMILY_CUDA
#include <cuda_runtime.h>
#endif

static void guest_die(const char *msg) {
    fprintf(stderr, "hpck guest: %s\n", msg);
    fflush(stderr);
    _exit(3);
}

static void send_msg(int s, uint32_t kind, uint32_t a, uint32_t b) {
    hpck_msg m = {HPCK_MAGIC, kind, a, b};
    if (send(s, &m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m) guest_die("host gone");
}

#ifdef HPCK_FAMILY_CUDA
#define CUDA_OK(call)                                                                   \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "hpck guest: %s: %s\n", #call, cudaGetErrorString(e_));    \
            _exit(5);                                                                   \
        }                                                                               \
    } while (0)
#endif

int main(int argc, char **argv) {
    int rank = 0, nranks = 1;
#ifdef HPCK_FAMILY_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
#else
    (void)argc;
    (void)argv;
#endif
    const char *fdenv = getenv("HPCK_FD");
    if (!fdenv) guest_die("HPCK_FD not set (run me through hpck_host)");
    int s = atoi(fdenv);
    send_msg(s, HPCK_HELLO, (uint32_t)rank, (uint32_t)nranks);

    hpck_setup setup;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&setup, sizeof setup};
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    if (recvmsg(s, &mh, 0) != (ssize_t)sizeof setup || setup.kind != HPCK_SETUP)
        guest_die("no arena from the host");
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (!c || c->cmsg_type != SCM_RIGHTS) guest_die("no arena descriptor");
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    char *base = (char *)mmap(NULL, setup.arena_bytes, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == (char *)MAP_FAILED) guest_die("cannot map the arena");
    close(fd);
    void *host[HPCK_MAXBUF] = {0}, *arg[HPCK_MAXBUF] = {0};
    for (int b = 0; b < hpck_nbuf; ++b) {
        host[b] = setup.bytes[b] ? base + setup.off[b] : NULL;
        arg[b] = host[b];
#ifdef HPCK_FAMILY_CUDA
        if (b > 0 && setup.bytes[b] && !(hpck_buf_flags[b] & HPCK_HOSTPTR))
            CUDA_OK(cudaMalloc(&arg[b], setup.bytes[b]));
#endif
    }
    send_msg(s, HPCK_READY, 0, 0);

    for (;;) {
        hpck_msg m;
        if (recv(s, &m, sizeof m, 0) != (ssize_t)sizeof m) guest_die("host gone");
        if (m.kind == HPCK_END) break;
        if (m.kind != HPCK_GO) guest_die("unexpected message");
#ifdef HPCK_FAMILY_CUDA
        /* inputs go to the device inside the timed window: data placed there earlier would
         * be visible to a kernel of the candidate's that is still running */
        for (int b = 1; b < hpck_nbuf; ++b) {
            if (arg[b] == host[b]) continue;
            if (hpck_buf_flags[b] & HPCK_IN)
                CUDA_OK(cudaMemcpy(arg[b], host[b], setup.bytes[b], cudaMemcpyHostToDevice));
            else /* pure outputs: poisoned on the device too, so a stale result never passes */
                CUDA_OK(cudaMemset(arg[b], 0xff, setup.bytes[b]));
        }
        hpck_call(arg);
        CUDA_OK(cudaDeviceSynchronize());
        CUDA_OK(cudaGetLastError());
        for (int b = 1; b < hpck_nbuf; ++b)
            if (arg[b] != host[b] && (hpck_buf_flags[b] & HPCK_OUT))
                CUDA_OK(cudaMemcpy(host[b], arg[b], setup.bytes[b], cudaMemcpyDeviceToHost));
#else
        hpck_call(arg);
#endif
        send_msg(s, HPCK_DONE, m.a, 0);
    }
#ifdef HPCK_FAMILY_MPI
    MPI_Finalize();
#endif
    fflush(stdout);
    _exit(0);
}
