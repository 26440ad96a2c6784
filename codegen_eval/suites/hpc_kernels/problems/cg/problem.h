/* Conjugate gradient: solve A x = b for a sparse SPD A (5-point operator on a G x G grid with
 * random symmetric weights, diagonally dominant) in CSR. Seen by the host and by the
 * candidate's build. */
#define G 100
#define N (G * G)
#define NNZ (N + 4 * G * (G - 1)) /* the diagonal plus both directions of every grid edge */
#define TOL 1e-8
#define MAXIT 5000

typedef struct {
    int n, max_iter;
    double tol;
} cg_params;

static const int hpck_nbuf = 7;
/* p, row_ptr, col_idx, vals, b, x (zero on entry: INOUT), the returned iteration count (an
 * int written by call.c on the host side, hence HOSTPTR for CUDA) */
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_IN,    HPCK_IN,
                                                HPCK_IN,     HPCK_IN,    HPCK_INOUT,
                                                HPCK_OUT | HPCK_HOSTPTR};
