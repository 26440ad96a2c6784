/* SpMV: y = A x, A square N x N in CSR (0-based), 3..13 nonzeros per row. Seen by the host
 * and by the candidate's build. */
#define N 300000
#define MAXNZ_ROW 13 /* the most nonzeros a row can get: capacities are rows * MAXNZ_ROW */

typedef struct {
    int n;     /* global size */
    int nrows; /* rows of this rank's block (all of them outside MPI) */
    long nnz;  /* nonzeros of those rows this repetition (= row_ptr[nrows]) */
} spmv_params;

static const int hpck_nbuf = 6;
/* p, row_ptr, col_idx, vals, x (this rank's block under MPI), y (likewise) */
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_IN, HPCK_IN, HPCK_IN, HPCK_IN,
                                                HPCK_OUT};
