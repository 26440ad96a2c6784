/* 2-D Jacobi: ITERS sweeps of the 5-point average on an N x N grid, boundary fixed. Seen by
 * the host and by the candidate's build. */
#define N 512
#define ITERS 100
#define NN ((size_t)N * N)

typedef struct {
    int n, iters;
    int row_off; /* first global row of this rank's block (0 outside MPI) */
    int nrows;   /* rows of this rank's block (all N outside MPI) */
} jacobi_params;

static const int hpck_nbuf = 2;
/* u is updated in place: INOUT, rewritten by the host every repetition */
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_INOUT}; /* p, u */
