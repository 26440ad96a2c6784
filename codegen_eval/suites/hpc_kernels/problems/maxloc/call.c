/* Max with index, guest side: call the candidate; its return value and idx go into the
 * result buffer (a host buffer for CUDA as well: idx is a host pointer there). */
#include "hpck.h"

#if defined(HPCK_FAMILY_MPI)
#include <mpi.h>
double max_loc_mpi(long n_local, const double *x_local, long *idx, MPI_Comm comm);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const maxloc_params *p = (const maxloc_params *)buf[0];
    maxloc_result *res = (maxloc_result *)buf[2];
    res->value = max_loc_mpi(p->n, (const double *)buf[1], &res->idx, MPI_COMM_WORLD);
}
#elif defined(HPCK_FAMILY_CUDA)
double max_loc_cuda(long n, const double *d_x, long *idx);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const maxloc_params *p = (const maxloc_params *)buf[0];
    maxloc_result *res = (maxloc_result *)buf[2];
    res->value = max_loc_cuda(p->n, (const double *)buf[1], &res->idx);
}
#else
double max_loc(long n, const double *x, long *idx);
void hpck_call(void *buf[HPCK_MAXBUF]) {
    const maxloc_params *p = (const maxloc_params *)buf[0];
    maxloc_result *res = (maxloc_result *)buf[2];
    res->value = max_loc(p->n, (const double *)buf[1], &res->idx);
}
#endif
