/* 2-D Jacobi, guest side: call the candidate with this rank's buffers. */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
void jacobi_mpi(int n, int iters, int row_off, int nrows_local, double *u_local, MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const jacobi_params *p = (const jacobi_params *)buf[0];
    jacobi_mpi(p->n, p->iters, p->row_off, p->nrows, (double *)buf[1], MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
void jacobi_cuda(int n, int iters, double *d_u);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const jacobi_params *p = (const jacobi_params *)buf[0];
    jacobi_cuda(p->n, p->iters, (double *)buf[1]);
}
#else
void jacobi(int n, int iters, double *u);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const jacobi_params *p = (const jacobi_params *)buf[0];
    jacobi(p->n, p->iters, (double *)buf[1]);
}
#endif
