/* Max with index: the largest value and the SMALLEST index holding it. Seen by the host and
 * by the candidate's build. */
#define N 4000000L

typedef struct {
    long n; /* elements of this rank's block (all of them outside MPI) */
} maxloc_params;

/* what the candidate returns: call.c stores the return value and passes &idx */
typedef struct {
    double value;
    long idx;
} maxloc_result;

static const int hpck_nbuf = 3;
/* p, x, result; the result lives on the host side for CUDA too (idx is a host pointer) */
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_IN, HPCK_OUT | HPCK_HOSTPTR};
