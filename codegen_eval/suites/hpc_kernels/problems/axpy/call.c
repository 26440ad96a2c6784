/* AXPY, guest side: call the candidate with this rank's buffers. */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const axpy_params *p = (const axpy_params *)buf[0];
    axpy_mpi(p->n, p->a, (const double *)buf[1], (double *)buf[2], MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
void axpy_cuda(long n, double a, const double *d_x, double *d_y);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const axpy_params *p = (const axpy_params *)buf[0];
    axpy_cuda(p->n, p->a, (const double *)buf[1], (double *)buf[2]);
}
#else
void axpy(long n, double a, const double *x, double *y);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const axpy_params *p = (const axpy_params *)buf[0];
    axpy(p->n, p->a, (const double *)buf[1], (double *)buf[2]);
}
#endif
