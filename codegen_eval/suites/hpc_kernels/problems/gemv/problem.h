/* GEMV: y = A x, A row-major M x NC. Seen by the host and by the candidate's build. */
#define M 2000
#define NC 2000

typedef struct {
    int m, n; /* the whole problem on every rank: A and x are replicated under MPI */
} gemv_params;

static const int hpck_nbuf = 4;
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_IN, HPCK_IN, HPCK_OUT}; /* p, A, x, y */
