/* SpMV, guest side: call the candidate with this rank's buffers. */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
void spmv_mpi(int n, int nrows_local, const int *row_ptr, const int *col_idx,
              const double *vals, const double *x_local, double *y_local, MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const spmv_params *p = (const spmv_params *)buf[0];
    spmv_mpi(p->n, p->nrows, (const int *)buf[1], (const int *)buf[2], (const double *)buf[3],
             (const double *)buf[4], (double *)buf[5], MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
void spmv_cuda(int n, const int *d_row_ptr, const int *d_col_idx, const double *d_vals,
               const double *d_x, double *d_y);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const spmv_params *p = (const spmv_params *)buf[0];
    spmv_cuda(p->n, (const int *)buf[1], (const int *)buf[2], (const double *)buf[3],
              (const double *)buf[4], (double *)buf[5]);
}
#else
void spmv(int n, const int *row_ptr, const int *col_idx, const double *vals, const double *x,
          double *y);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const spmv_params *p = (const spmv_params *)buf[0];
    spmv(p->n, (const int *)buf[1], (const int *)buf[2], (const double *)buf[3],
         (const double *)buf[4], (double *)buf[5]);
}
#endif
