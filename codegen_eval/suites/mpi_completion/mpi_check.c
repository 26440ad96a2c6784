/* mpi-completion's run-time check, linked by the scorer's build step into every candidate
 * and reference program (docs/suite-mpi-completion.md, "Threat model"). Harness code: the
 * answer only adds screened MPI calls to the program, which cannot name anything here.
 *
 * Through MPI's profiling interface (each MPI_X defined here calls PMPI_X) it checks what
 * the program's output cannot show:
 *
 *   request_not_completed  a request made by a nonblocking call (MPI_Isend, MPI_Irecv,
 *                          MPI_Ibcast, ...) that no MPI_Wait* / MPI_Test* completed by
 *                          MPI_Finalize, or that MPI_Request_free released while active:
 *                          the program used (or freed) buffers whose transfer may not have
 *                          happened, and passed only because the timing was kind.
 *   buffer_in_use          the buffer of an MPI_Isend (Issend, Irsend, Ibsend) changed
 *                          before the request completed.
 *   setup_overwritten      the variables that MPI_Comm_rank / MPI_Comm_size wrote (the
 *                          program's `rank` and `size`) changed in a later MPI call: an
 *                          answer that rewrites them (an in-place MPI_Allreduce with MPI_LAND
 *                          turns size into 1) makes every rank do all the work alone.
 *
 * And it makes a read of an MPI_Irecv buffer before its completion visible: MPI receives
 * into a private copy, the program's buffer holds a poison pattern (0xA5 bytes) until a
 * Wait/Test completes the request, which then restores the old bytes and copies the message
 * in (MPI leaves the buffer undefined until completion, so this is a legal implementation).
 * Contiguous data only (every predefined datatype); MPI_PROC_NULL receives are left alone.
 *
 * A failed check prints one line `cge-mpi-check: <what>: <details>` on stderr and ends the
 * job with MPI_Abort(MPI_COMM_WORLD, CGE_EXIT); the scorer maps the line to the failure
 * class wrong_answer:<what>. Every function the suite's screen accepts is wrapped, so
 * `rank` and `size` are compared after every call that can write memory.
 *
 * State lives in static storage (.bss), below the heap's randomised start: a receive past
 * the end of a heap or stack buffer cannot reach it. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CGE_EXIT 86
#define CGE_MAX_REQUESTS 1024
#define CGE_MAX_SETUP 8
#define CGE_POISON 0xA5

struct cge_req {
    MPI_Request handle;
    const char *from; /* the call that made it */
    void *user;       /* Irecv: the program's buffer, poisoned until completion */
    void *shadow;     /* Irecv: where MPI receives */
    void *saved;      /* Irecv: the program's bytes before the call */
    size_t bytes;     /* Irecv: size of all three (0: received directly) */
    const void *send_buf; /* Isend family: the buffer and its hash at the call */
    size_t send_bytes;
    uint64_t send_hash;
};

static struct cge_req cge_live[CGE_MAX_REQUESTS];
static int cge_n_live;
static int cge_n_live_mirror = ~0; /* ~cge_n_live: a blanket overwrite breaks the pair */
static int cge_n_freed_active;
static const char *cge_freed_from;

static const int *cge_setup_ptr[CGE_MAX_SETUP];
static int cge_setup_value[CGE_MAX_SETUP];
static const char *cge_setup_what[CGE_MAX_SETUP];
static int cge_n_setup;

static void cge_fail(const char *what, const char *details) {
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "cge-mpi-check: %s: rank %d: %s\n", what, rank, details);
    fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, CGE_EXIT);
    _Exit(CGE_EXIT); /* not reached: MPI_Abort does not return */
}

static void cge_record_setup(const int *ptr, const char *what) {
    if (cge_n_setup < CGE_MAX_SETUP) {
        cge_setup_ptr[cge_n_setup] = ptr;
        cge_setup_value[cge_n_setup] = *ptr;
        cge_setup_what[cge_n_setup] = what;
        cge_n_setup++;
    }
}

/* After every wrapped call: the program's rank and size still hold what MPI wrote. */
static void cge_after(const char *call) {
    char msg[256];
    for (int k = 0; k < cge_n_setup; k++) {
        if (*cge_setup_ptr[k] != cge_setup_value[k]) {
            snprintf(msg, sizeof msg, "%s changed the variable that %s wrote (%d, now %d); "
                     "an answer's calls may not write the program's rank or size",
                     call, cge_setup_what[k], cge_setup_value[k], *cge_setup_ptr[k]);
            cge_fail("setup_overwritten", msg);
        }
    }
    if (cge_n_live != ~cge_n_live_mirror)
        cge_fail("request_not_completed", "the request table was overwritten");
}

/* Bytes of `count` elements of `type` when they lie contiguously from the buffer's start
 * (lower bound 0, no gaps: every predefined datatype), else 0. */
static size_t cge_contiguous(int count, MPI_Datatype type) {
    MPI_Aint lb, extent;
    int size;
    if (count <= 0 || PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_size(type, &size) != MPI_SUCCESS || lb != 0 || extent != size || size <= 0)
        return 0;
    return (size_t)count * (size_t)size;
}

static uint64_t cge_hash(const void *buf, size_t bytes) { /* FNV-1a */
    const unsigned char *p = buf;
    uint64_t h = 1469598103934665603ULL;
    for (size_t k = 0; k < bytes; k++)
        h = (h ^ p[k]) * 1099511628211ULL;
    return h;
}

static void cge_track(const struct cge_req *r) {
    if (r->handle == MPI_REQUEST_NULL)
        return;
    if (cge_n_live >= CGE_MAX_REQUESTS) /* fail closed: never an untracked request */
        cge_fail("request_not_completed", "more than 1024 nonblocking requests at once");
    cge_live[cge_n_live++] = *r;
    cge_n_live_mirror = ~cge_n_live;
}

static int cge_find(MPI_Request handle) {
    if (handle == MPI_REQUEST_NULL)
        return -1;
    for (int k = 0; k < cge_n_live; k++)
        if (cge_live[k].handle == handle)
            return k;
    return -1;
}

static void cge_forget(int k) {
    cge_live[k] = cge_live[--cge_n_live];
    cge_n_live_mirror = ~cge_n_live;
}

/* `handle` (taken before the call that completed it) completed with status `st`: deliver a
 * shadowed receive, check a send buffer, forget the request. */
static void cge_done(MPI_Request handle, const MPI_Status *st) {
    char msg[256];
    int k = cge_find(handle);
    if (k < 0)
        return;
    struct cge_req r = cge_live[k];
    cge_forget(k);
    if (r.bytes) {
        int got = 0;
        size_t n = r.bytes;
        if (PMPI_Get_count(st, MPI_BYTE, &got) == MPI_SUCCESS && got >= 0 &&
            (size_t)got < n)
            n = (size_t)got; /* a shorter message leaves the rest of the buffer as it was */
        memcpy(r.user, r.saved, r.bytes);
        memcpy(r.user, r.shadow, n);
        free(r.shadow);
        free(r.saved);
    }
    if (r.send_bytes && cge_hash(r.send_buf, r.send_bytes) != r.send_hash) {
        snprintf(msg, sizeof msg, "the buffer of %s changed before a Wait completed the "
                 "request", r.from);
        cge_fail("buffer_in_use", msg);
    }
}

/* Waitsome / Testsome: the requests named by indices[0 .. outcount) completed. */
static void cge_done_some(const MPI_Request *h, const MPI_Status *st, int count, int outcount,
                          const int indices[]) {
    if (outcount == MPI_UNDEFINED)
        return;
    for (int k = 0; k < outcount; k++)
        if (indices[k] >= 0 && indices[k] < count)
            cge_done(h[indices[k]], &st[k]);
}

/* Statuses for a completion call: the caller's, or `own` (n of them) when it ignores them,
 * since a shadowed receive needs its message length. */
static MPI_Status *cge_statuses(MPI_Status *given, int n, MPI_Status **own) {
    *own = NULL;
    if (given != MPI_STATUSES_IGNORE)
        return given;
    *own = malloc((size_t)(n > 0 ? n : 1) * sizeof **own);
    if (*own == NULL)
        cge_fail("request_not_completed", "out of memory while checking requests");
    return *own;
}

/* The handles of an array argument, copied before the call sets completed ones to
 * MPI_REQUEST_NULL. */
static MPI_Request *cge_copy(int count, const MPI_Request requests[]) {
    MPI_Request *copy = malloc((size_t)(count > 0 ? count : 1) * sizeof *copy);
    if (copy == NULL)
        cge_fail("request_not_completed", "out of memory while checking requests");
    for (int k = 0; k < count; k++)
        copy[k] = requests[k];
    return copy;
}

/* -- set-up ------------------------------------------------------------------------------ */
int MPI_Comm_rank(MPI_Comm comm, int *rank) {
    int rc = PMPI_Comm_rank(comm, rank);
    if (rc == MPI_SUCCESS)
        cge_record_setup(rank, "MPI_Comm_rank");
    return rc;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
    int rc = PMPI_Comm_size(comm, size);
    if (rc == MPI_SUCCESS)
        cge_record_setup(size, "MPI_Comm_size");
    return rc;
}

int MPI_Finalize(void) {
    char msg[256];
    cge_after("MPI_Finalize");
    if (cge_n_freed_active) {
        snprintf(msg, sizeof msg, "%d request(s) (first from %s) were released by "
                 "MPI_Request_free before any MPI_Wait completed them",
                 cge_n_freed_active, cge_freed_from);
        cge_fail("request_not_completed", msg);
    }
    if (cge_n_live) {
        snprintf(msg, sizeof msg, "%d nonblocking request(s) (first from %s) were never "
                 "completed by MPI_Wait/MPI_Waitall before MPI_Finalize",
                 cge_n_live, cge_live[0].from);
        cge_fail("request_not_completed", msg);
    }
    return PMPI_Finalize();
}

/* -- requests ------------------------------------------------------------------------------ */
int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request) {
    struct cge_req r = {.from = "MPI_Irecv"};
    size_t bytes = source == MPI_PROC_NULL ? 0 : cge_contiguous(count, type);
    void *target = buf;
    if (bytes) {
        r.shadow = malloc(bytes);
        r.saved = malloc(bytes);
        if (r.shadow == NULL || r.saved == NULL)
            cge_fail("request_not_completed", "out of memory while checking requests");
        memcpy(r.saved, buf, bytes);
        memset(buf, CGE_POISON, bytes);
        r.user = buf;
        r.bytes = bytes;
        target = r.shadow;
    }
    int rc = PMPI_Irecv(target, count, type, source, tag, comm, request);
    if (rc == MPI_SUCCESS) {
        r.handle = *request;
        cge_track(&r);
    }
    cge_after("MPI_Irecv");
    return rc;
}

#define CGE_SEND(name)                                                                 \
    int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag,   \
                   MPI_Comm comm, MPI_Request *request) {                              \
        struct cge_req r = {.from = "MPI_" #name, .send_buf = buf};                    \
        r.send_bytes = cge_contiguous(count, type);                                    \
        r.send_hash = cge_hash(buf, r.send_bytes);                                     \
        int rc = PMPI_##name(buf, count, type, dest, tag, comm, request);              \
        if (rc == MPI_SUCCESS) {                                                       \
            r.handle = *request;                                                       \
            cge_track(&r);                                                             \
        }                                                                              \
        cge_after("MPI_" #name);                                                       \
        return rc;                                                                     \
    }
CGE_SEND(Isend)
CGE_SEND(Issend)
CGE_SEND(Irsend)
CGE_SEND(Ibsend)

/* -- completion ---------------------------------------------------------------------------- */
int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    MPI_Request h = *request;
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    int rc = PMPI_Wait(request, st);
    if (rc == MPI_SUCCESS)
        cge_done(h, st);
    cge_after("MPI_Wait");
    return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
    MPI_Request *h = cge_copy(count, requests);
    MPI_Status *own, *st = cge_statuses(statuses, count, &own);
    int rc = PMPI_Waitall(count, requests, st);
    if (rc == MPI_SUCCESS)
        for (int k = 0; k < count; k++)
            cge_done(h[k], &st[k]);
    free(h);
    free(own);
    cge_after("MPI_Waitall");
    return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
    MPI_Request *h = cge_copy(count, requests);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    int rc = PMPI_Waitany(count, requests, index, st);
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED && *index >= 0 && *index < count)
        cge_done(h[*index], st);
    free(h);
    cge_after("MPI_Waitany");
    return rc;
}

int MPI_Waitsome(int count, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    MPI_Request *h = cge_copy(count, requests);
    MPI_Status *own, *st = cge_statuses(statuses, count, &own);
    int rc = PMPI_Waitsome(count, requests, outcount, indices, st);
    if (rc == MPI_SUCCESS)
        cge_done_some(h, st, count, *outcount, indices);
    free(h);
    free(own);
    cge_after("MPI_Waitsome");
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    MPI_Request h = *request;
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    int rc = PMPI_Test(request, flag, st);
    if (rc == MPI_SUCCESS && *flag)
        cge_done(h, st);
    cge_after("MPI_Test");
    return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    MPI_Request *h = cge_copy(count, requests);
    MPI_Status *own, *st = cge_statuses(statuses, count, &own);
    int rc = PMPI_Testall(count, requests, flag, st);
    if (rc == MPI_SUCCESS && *flag)
        for (int k = 0; k < count; k++)
            cge_done(h[k], &st[k]);
    free(h);
    free(own);
    cge_after("MPI_Testall");
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
    MPI_Request *h = cge_copy(count, requests);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    int rc = PMPI_Testany(count, requests, index, flag, st);
    if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED && *index >= 0 && *index < count)
        cge_done(h[*index], st);
    free(h);
    cge_after("MPI_Testany");
    return rc;
}

int MPI_Testsome(int count, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    MPI_Request *h = cge_copy(count, requests);
    MPI_Status *own, *st = cge_statuses(statuses, count, &own);
    int rc = PMPI_Testsome(count, requests, outcount, indices, st);
    if (rc == MPI_SUCCESS)
        cge_done_some(h, st, count, *outcount, indices);
    free(h);
    free(own);
    cge_after("MPI_Testsome");
    return rc;
}

/* Freeing an active request is legal MPI for a send, but the program can then never know
 * that its buffers are free (or, for a receive, filled): counted as never completed. A
 * shadow buffer stays allocated: MPI may still write into it. */
int MPI_Request_free(MPI_Request *request) {
    int k = cge_find(*request);
    int rc = PMPI_Request_free(request);
    if (k >= 0) {
        if (cge_n_freed_active++ == 0)
            cge_freed_from = cge_live[k].from;
        cge_forget(k);
    }
    cge_after("MPI_Request_free");
    return rc;
}

/* -- every other accepted call: forward, then check (nonblocking ones track `request`) ---- */
#define CGE_WRAP(name, params, args)                                                   \
    int MPI_##name params {                                                            \
        int rc = PMPI_##name args;                                                     \
        cge_after("MPI_" #name);                                                       \
        return rc;                                                                     \
    }
#define CGE_WRAP_REQ(name, params, args)                                               \
    int MPI_##name params {                                                            \
        int rc = PMPI_##name args;                                                     \
        if (rc == MPI_SUCCESS) {                                                       \
            struct cge_req r = {.handle = *request, .from = "MPI_" #name};             \
            cge_track(&r);                                                             \
        }                                                                              \
        cge_after("MPI_" #name);                                                       \
        return rc;                                                                     \
    }
#define CGE_P2P const void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm
#define CGE_P2P_ARGS buf, count, type, peer, tag, comm
#define CGE_RED const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op
#define CGE_RED_ARGS sbuf, rbuf, count, type, op
#define CGE_GATHER const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, \
    MPI_Datatype rtype
#define CGE_GATHER_ARGS sbuf, scount, stype, rbuf, rcount, rtype
#define CGE_SCATTERV const void *sbuf, const int scounts[], const int displs[], \
    MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm
#define CGE_SCATTERV_ARGS sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm
#define CGE_GATHERV const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, \
    const int rcounts[], const int displs[], MPI_Datatype rtype
#define CGE_GATHERV_ARGS sbuf, scount, stype, rbuf, rcounts, displs, rtype
#define CGE_ALLTOALLV const void *sbuf, const int scounts[], const int sdispls[], \
    MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[], \
    MPI_Datatype rtype, MPI_Comm comm
#define CGE_ALLTOALLV_ARGS sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm

CGE_WRAP(Send, (CGE_P2P), (CGE_P2P_ARGS))
CGE_WRAP(Ssend, (CGE_P2P), (CGE_P2P_ARGS))
CGE_WRAP(Rsend, (CGE_P2P), (CGE_P2P_ARGS))
CGE_WRAP(Recv, (void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                MPI_Status *status), (buf, count, type, peer, tag, comm, status))
CGE_WRAP(Sendrecv, (const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                    void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                    MPI_Comm comm, MPI_Status *status),
         (sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status))
CGE_WRAP(Sendrecv_replace, (void *buf, int count, MPI_Datatype type, int dest, int stag,
                            int source, int rtag, MPI_Comm comm, MPI_Status *status),
         (buf, count, type, dest, stag, source, rtag, comm, status))
CGE_WRAP(Probe, (int source, int tag, MPI_Comm comm, MPI_Status *status),
         (source, tag, comm, status))
CGE_WRAP(Barrier, (MPI_Comm comm), (comm))
CGE_WRAP(Bcast, (void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm),
         (buf, count, type, root, comm))
CGE_WRAP(Reduce, (CGE_RED, int root, MPI_Comm comm), (CGE_RED_ARGS, root, comm))
CGE_WRAP(Allreduce, (CGE_RED, MPI_Comm comm), (CGE_RED_ARGS, comm))
CGE_WRAP(Scan, (CGE_RED, MPI_Comm comm), (CGE_RED_ARGS, comm))
CGE_WRAP(Exscan, (CGE_RED, MPI_Comm comm), (CGE_RED_ARGS, comm))
CGE_WRAP(Reduce_scatter_block, (CGE_RED, MPI_Comm comm), (CGE_RED_ARGS, comm))
CGE_WRAP(Reduce_scatter, (const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type,
                          MPI_Op op, MPI_Comm comm), (sbuf, rbuf, rcounts, type, op, comm))
CGE_WRAP(Scatter, (CGE_GATHER, int root, MPI_Comm comm), (CGE_GATHER_ARGS, root, comm))
CGE_WRAP(Gather, (CGE_GATHER, int root, MPI_Comm comm), (CGE_GATHER_ARGS, root, comm))
CGE_WRAP(Allgather, (CGE_GATHER, MPI_Comm comm), (CGE_GATHER_ARGS, comm))
CGE_WRAP(Alltoall, (CGE_GATHER, MPI_Comm comm), (CGE_GATHER_ARGS, comm))
CGE_WRAP(Scatterv, (CGE_SCATTERV), (CGE_SCATTERV_ARGS))
CGE_WRAP(Gatherv, (CGE_GATHERV, int root, MPI_Comm comm), (CGE_GATHERV_ARGS, root, comm))
CGE_WRAP(Allgatherv, (CGE_GATHERV, MPI_Comm comm), (CGE_GATHERV_ARGS, comm))
CGE_WRAP(Alltoallv, (CGE_ALLTOALLV), (CGE_ALLTOALLV_ARGS))

CGE_WRAP_REQ(Ibarrier, (MPI_Comm comm, MPI_Request *request), (comm, request))
CGE_WRAP_REQ(Ibcast, (void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                      MPI_Request *request), (buf, count, type, root, comm, request))
CGE_WRAP_REQ(Ireduce, (CGE_RED, int root, MPI_Comm comm, MPI_Request *request),
             (CGE_RED_ARGS, root, comm, request))
CGE_WRAP_REQ(Iallreduce, (CGE_RED, MPI_Comm comm, MPI_Request *request),
             (CGE_RED_ARGS, comm, request))
CGE_WRAP_REQ(Iscan, (CGE_RED, MPI_Comm comm, MPI_Request *request),
             (CGE_RED_ARGS, comm, request))
CGE_WRAP_REQ(Iexscan, (CGE_RED, MPI_Comm comm, MPI_Request *request),
             (CGE_RED_ARGS, comm, request))
CGE_WRAP_REQ(Ireduce_scatter_block, (CGE_RED, MPI_Comm comm, MPI_Request *request),
             (CGE_RED_ARGS, comm, request))
CGE_WRAP_REQ(Ireduce_scatter, (const void *sbuf, void *rbuf, const int rcounts[],
                               MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                               MPI_Request *request),
             (sbuf, rbuf, rcounts, type, op, comm, request))
CGE_WRAP_REQ(Iscatter, (CGE_GATHER, int root, MPI_Comm comm, MPI_Request *request),
             (CGE_GATHER_ARGS, root, comm, request))
CGE_WRAP_REQ(Igather, (CGE_GATHER, int root, MPI_Comm comm, MPI_Request *request),
             (CGE_GATHER_ARGS, root, comm, request))
CGE_WRAP_REQ(Iallgather, (CGE_GATHER, MPI_Comm comm, MPI_Request *request),
             (CGE_GATHER_ARGS, comm, request))
CGE_WRAP_REQ(Ialltoall, (CGE_GATHER, MPI_Comm comm, MPI_Request *request),
             (CGE_GATHER_ARGS, comm, request))
CGE_WRAP_REQ(Iscatterv, (CGE_SCATTERV, MPI_Request *request), (CGE_SCATTERV_ARGS, request))
CGE_WRAP_REQ(Igatherv, (CGE_GATHERV, int root, MPI_Comm comm, MPI_Request *request),
             (CGE_GATHERV_ARGS, root, comm, request))
CGE_WRAP_REQ(Iallgatherv, (CGE_GATHERV, MPI_Comm comm, MPI_Request *request),
             (CGE_GATHERV_ARGS, comm, request))
CGE_WRAP_REQ(Ialltoallv, (CGE_ALLTOALLV, MPI_Request *request), (CGE_ALLTOALLV_ARGS, request))
