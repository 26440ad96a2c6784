/* GEMM: C = A B, all N x N row-major. Seen by the host and by the candidate's build. */
#define N 320
#define NN ((size_t)N * N)

typedef struct {
    int n;
} gemm_params;

static const int hpck_nbuf = 4;
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_IN, HPCK_IN, HPCK_OUT}; /* p, A, B, C */
