/* AXPY: y = a*x + y. Seen by the host and by the candidate's build. */
#define N 2000000L

typedef struct {
    double a;
    long n; /* elements of this rank's block (all of them outside MPI) */
} axpy_params;

static const int hpck_nbuf = 3;
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_IN, HPCK_INOUT}; /* p, x, y */
