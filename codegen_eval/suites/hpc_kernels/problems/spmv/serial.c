void spmv(int n, const int *row_ptr, const int *col_idx, const double *vals, const double *x,
          double *y) {
    for (int i = 0; i < n; ++i) {
        double s = 0.0;
        for (int k = row_ptr[i]; k < row_ptr[i + 1]; ++k) s += vals[k] * x[col_idx[k]];
        y[i] = s;
    }
}
