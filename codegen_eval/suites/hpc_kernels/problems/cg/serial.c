#include <stdlib.h>

int cg(int n, const int *row_ptr, const int *col_idx, const double *vals, const double *b,
       double *x, double tol, int max_iter) {
    double *r = malloc(n * sizeof(double)), *p = malloc(n * sizeof(double));
    double *q = malloc(n * sizeof(double));
    double rs = 0.0;
    for (int i = 0; i < n; ++i) {
        x[i] = 0.0;
        r[i] = p[i] = b[i];
        rs += b[i] * b[i];
    }
    double stop = tol * tol * rs;
    int it = 0;
    for (; it < max_iter && rs > stop; ++it) {
        double pq = 0.0;
        for (int i = 0; i < n; ++i) {
            double s = 0.0;
            for (int k = row_ptr[i]; k < row_ptr[i + 1]; ++k) s += vals[k] * p[col_idx[k]];
            q[i] = s;
            pq += p[i] * s;
        }
        double alpha = rs / pq, rs_new = 0.0;
        for (int i = 0; i < n; ++i) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            rs_new += r[i] * r[i];
        }
        double beta = rs_new / rs;
        for (int i = 0; i < n; ++i) p[i] = r[i] + beta * p[i];
        rs = rs_new;
    }
    free(r);
    free(p);
    free(q);
    return it;
}
