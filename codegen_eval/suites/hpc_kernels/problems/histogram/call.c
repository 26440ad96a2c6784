/* Histogram, guest side: call the candidate with this rank's buffers. */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
void histogram_mpi(long n_local, const int *data_local, int nbins, long long *counts,
                   MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const histogram_params *p = (const histogram_params *)buf[0];
    histogram_mpi(p->n, (const int *)buf[1], p->nbins, (long long *)buf[2], MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
void histogram_cuda(long n, const int *d_data, int nbins, long long *d_counts);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const histogram_params *p = (const histogram_params *)buf[0];
    histogram_cuda(p->n, (const int *)buf[1], p->nbins, (long long *)buf[2]);
}
#else
void histogram(long n, const int *data, int nbins, long long *counts);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const histogram_params *p = (const histogram_params *)buf[0];
    histogram(p->n, (const int *)buf[1], p->nbins, (long long *)buf[2]);
}
#endif
