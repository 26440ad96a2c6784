/* GEMM, guest side: call the candidate with this rank's buffers (NULL where zero-byte). */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
void gemm_mpi(int n, const double *A, const double *B, double *C, MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const gemm_params *p = (const gemm_params *)buf[0];
    gemm_mpi(p->n, (const double *)buf[1], (const double *)buf[2], (double *)buf[3],
             MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
void gemm_cuda(int n, const double *d_A, const double *d_B, double *d_C);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const gemm_params *p = (const gemm_params *)buf[0];
    gemm_cuda(p->n, (const double *)buf[1], (const double *)buf[2], (double *)buf[3]);
}
#else
void gemm(int n, const double *A, const double *B, double *C);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const gemm_params *p = (const gemm_params *)buf[0];
    gemm(p->n, (const double *)buf[1], (const double *)buf[2], (double *)buf[3]);
}
#endif
