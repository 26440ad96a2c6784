/* GEMV, guest side: call the candidate with this rank's buffers. */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
void gemv_mpi(int m, int n, const double *A, const double *x, double *y, MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const gemv_params *p = (const gemv_params *)buf[0];
    gemv_mpi(p->m, p->n, (const double *)buf[1], (const double *)buf[2], (double *)buf[3],
             MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
void gemv_cuda(int m, int n, const double *d_A, const double *d_x, double *d_y);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const gemv_params *p = (const gemv_params *)buf[0];
    gemv_cuda(p->m, p->n, (const double *)buf[1], (const double *)buf[2], (double *)buf[3]);
}
#else
void gemv(int m, int n, const double *A, const double *x, double *y);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const gemv_params *p = (const gemv_params *)buf[0];
    gemv(p->m, p->n, (const double *)buf[1], (const double *)buf[2], (double *)buf[3]);
}
#endif
