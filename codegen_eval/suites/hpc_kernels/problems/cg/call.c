/* Conjugate gradient, guest side: call the candidate with this rank's buffers and keep the
 * iteration count it returns in buffer 6 (not judged). */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
int cg_mpi(int n, const int *row_ptr, const int *col_idx, const double *vals, const double *b,
           double *x, double tol, int max_iter, MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const cg_params *p = (const cg_params *)buf[0];
    *(int *)buf[6] = cg_mpi(p->n, (const int *)buf[1], (const int *)buf[2],
                            (const double *)buf[3], (const double *)buf[4], (double *)buf[5],
                            p->tol, p->max_iter, MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
int cg_cuda(int n, const int *d_row_ptr, const int *d_col_idx, const double *d_vals,
            const double *d_b, double *d_x, double tol, int max_iter);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const cg_params *p = (const cg_params *)buf[0];
    *(int *)buf[6] = cg_cuda(p->n, (const int *)buf[1], (const int *)buf[2],
                             (const double *)buf[3], (const double *)buf[4], (double *)buf[5],
                             p->tol, p->max_iter);
}
#else
int cg(int n, const int *row_ptr, const int *col_idx, const double *vals, const double *b,
       double *x, double tol, int max_iter);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const cg_params *p = (const cg_params *)buf[0];
    *(int *)buf[6] = cg(p->n, (const int *)buf[1], (const int *)buf[2], (const double *)buf[3],
                        (const double *)buf[4], (double *)buf[5], p->tol, p->max_iter);
}
#endif
