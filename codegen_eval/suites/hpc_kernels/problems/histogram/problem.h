/* Histogram: counts[b] = number of data[i] == b, data in [0, NBINS). Seen by the host and by
 * the candidate's build. */
#define N 4000000L
#define NBINS 256

typedef struct {
    long n; /* values of this rank's block (all of them outside MPI) */
    int nbins;
} histogram_params;

static const int hpck_nbuf = 3;
/* p, data, counts; counts arrive as garbage (the host's poison, -1 in every bin) */
static const int hpck_buf_flags[HPCK_MAXBUF] = {HPCK_PARAMS, HPCK_IN, HPCK_OUT};
