/* Inclusive prefix sum, guest side: call the candidate with this rank's buffers. */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
void prefix_sum_mpi(long n_local, const long long *x_local, long long *y_local, MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const scan_params *p = (const scan_params *)buf[0];
    prefix_sum_mpi(p->n, (const long long *)buf[1], (long long *)buf[2], MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
void prefix_sum_cuda(long n, const long long *d_x, long long *d_y);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const scan_params *p = (const scan_params *)buf[0];
    prefix_sum_cuda(p->n, (const long long *)buf[1], (long long *)buf[2]);
}
#else
void prefix_sum(long n, const long long *x, long long *y);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const scan_params *p = (const scan_params *)buf[0];
    prefix_sum(p->n, (const long long *)buf[1], (long long *)buf[2]);
}
#endif
