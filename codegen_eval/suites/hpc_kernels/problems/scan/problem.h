/* Inclusive prefix sum of 64-bit integers (compared exactly). Seen by the host and by the
 * candidate's build. */
#define N 4000000L

typedef struct {
    long n; /* elements of this rank's block (all of them outside MPI) */
} scan_params;

static const int hpck_nbuf = 3;
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_IN, HPCK_OUT}; /* p, x, y */
