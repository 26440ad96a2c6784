#include <mpi.h>
#include <stdlib.h>

/* A, b replicated. Each rank owns a block of rows and the matching block of every vector;
 * the search direction is re-assembled with an all-gather before each product and the dot
 * products are all-reduced. x is gathered to rank 0 at the end. */
int cg_mpi(int n, const int *row_ptr, const int *col_idx, const double *vals, const double *b,
           double *x, double tol, int max_iter, MPI_Comm comm) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int q = 0, off = 0; q < size; ++q) {
        counts[q] = n / size + (q < n % size);
        displs[q] = off;
        off += counts[q];
    }
    int lo = displs[rank], m = counts[rank];
    double *p = malloc(n * sizeof(double)); /* full direction vector */
    double *r = malloc((m + 1) * sizeof(double)), *q = malloc((m + 1) * sizeof(double));
    double *xl = malloc((m + 1) * sizeof(double));
    double rs_loc = 0.0, rs;
    for (int i = 0; i < n; ++i) p[i] = b[i];
    for (int i = 0; i < m; ++i) {
        xl[i] = 0.0;
        r[i] = b[lo + i];
        rs_loc += r[i] * r[i];
    }
    MPI_Allreduce(&rs_loc, &rs, 1, MPI_DOUBLE, MPI_SUM, comm);
    double stop = tol * tol * rs;
    int it = 0;
    for (; it < max_iter && rs > stop; ++it) {
        double pq_loc = 0.0, pq, rs_new;
#pragma omp parallel for reduction(+ : pq_loc)
        for (int i = 0; i < m; ++i) {
            double s = 0.0;
            for (int k = row_ptr[lo + i]; k < row_ptr[lo + i + 1]; ++k) s += vals[k] * p[col_idx[k]];
            q[i] = s;
            pq_loc += p[lo + i] * s;
        }
        MPI_Allreduce(&pq_loc, &pq, 1, MPI_DOUBLE, MPI_SUM, comm);
        double alpha = rs / pq, rsl = 0.0;
#pragma omp parallel for reduction(+ : rsl)
        for (int i = 0; i < m; ++i) {
            xl[i] += alpha * p[lo + i];
            r[i] -= alpha * q[i];
            rsl += r[i] * r[i];
        }
        MPI_Allreduce(&rsl, &rs_new, 1, MPI_DOUBLE, MPI_SUM, comm);
        double beta = rs_new / rs;
#pragma omp parallel for
        for (int i = 0; i < m; ++i) q[i] = r[i] + beta * p[lo + i]; /* q reused as new p block */
        MPI_Allgatherv(q, m, MPI_DOUBLE, p, counts, displs, MPI_DOUBLE, comm);
        rs = rs_new;
    }
    MPI_Gatherv(xl, m, MPI_DOUBLE, x, counts, displs, MPI_DOUBLE, 0, comm);
    free(p);
    free(r);
    free(q);
    free(xl);
    free(counts);
    free(displs);
    return it;
}
