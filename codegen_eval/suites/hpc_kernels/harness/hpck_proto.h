/* The host <-> guest protocol (SOCK_SEQPACKET, one message per record). Shared by hpck.h
 * and the problem-independent guard. */
#ifndef HPCK_PROTO_H
#define HPCK_PROTO_H
#include <stdint.h>

#define HPCK_MAGIC 0x314b5048u /* "HPK1" */
#define HPCK_MAXBUF 8
#define HPCK_MAXRANKS 64

/* How a buffer is used. PARAMS is buffer 0: the problem's scalar parameters for this rank,
 * written by the host every repetition. OUT buffers are poisoned by the host before each
 * repetition so stale results never pass. HOSTPTR (CUDA family): passed as a host pointer. */
enum { HPCK_PARAMS = 1, HPCK_IN = 2, HPCK_OUT = 4, HPCK_INOUT = HPCK_IN | HPCK_OUT, HPCK_HOSTPTR = 8 };

enum { HPCK_HELLO = 'H', HPCK_SETUP = 'S', HPCK_READY = 'R', HPCK_GO = 'G', HPCK_DONE = 'D',
       HPCK_END = 'E' };

typedef struct {
    uint32_t magic;
    uint32_t kind;
    uint32_t a, b; /* HELLO: rank, nranks; GO/DONE: repetition */
} hpck_msg;

typedef struct {
    uint32_t magic;
    uint32_t kind; /* HPCK_SETUP; the arena's memfd rides along as SCM_RIGHTS */
    uint64_t arena_bytes;
    uint64_t off[HPCK_MAXBUF], bytes[HPCK_MAXBUF];
} hpck_setup;

#endif
