"""The hpc-kernels problems: per problem a statement, the exact C/CUDA signature of every
programming-model family and its data contract, plus where the driver and the reference
solutions live (``problems/<name>/``). Prompts are assembled here from those parts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).parent / "problems"

# variant -> (family of the signature, language, parallel model, [(np, threads), ...])
# Run configurations: OpenMP at 1 and 2 threads, MPI at 1, 2 and 4 ranks (oversubscribed on a
# 2-core machine), hybrid at 1x2 and 2x2; the last configuration gives the headline metrics.
VARIANTS: dict[str, tuple[str, str, str, list[tuple[int, int]]]] = {
    "serial": ("shared", "c", "serial", [(1, 1)]),
    "openmp": ("shared", "c", "openmp", [(1, 1), (1, 2)]),
    "mpi": ("mpi", "c", "mpi", [(1, 1), (2, 1), (4, 1)]),
    "mpi-openmp": ("mpi", "c", "mpi+openmp", [(1, 2), (2, 2)]),
    "cuda": ("cuda", "cuda", "cuda", [(1, 1)]),
}

_MPI_BLOCKS = (
    "Block distribution: with p ranks and n elements, rank r owns the contiguous block that "
    "starts at r*(n/p) + min(r, n%p) and holds n/p + (r < n%p ? 1 : 0) elements (integer "
    "division); blocks are in rank order."
)


@dataclass(frozen=True, slots=True)
class Problem:
    name: str
    title: str
    statement: str  # what to compute, shared by all variants
    signatures: dict[str, str]  # family -> exact prototype
    contracts: dict[str, str]  # family -> data layout / ownership
    size: str  # the problem size the driver uses, told to the model for tuning

    def source(self, variant: str) -> str:
        ext = "cu" if variant == "cuda" else "c"
        return (DATA_DIR / self.name / f"{variant}.{ext}").read_text()


_SHARED = "Arrays are allocated by the caller. Do not allocate or free the caller's arrays."
_CUDA = (
    "All pointer arguments prefixed d_ are device pointers (cudaMalloc'ed by the caller), "
    "except where stated. Launch your own kernel(s); the caller synchronises after your "
    "function returns and times the call including that synchronisation."
)

PROBLEMS: dict[str, Problem] = {
    p.name: p
    for p in [
        Problem(
            "axpy",
            "AXPY",
            "Compute y[i] = a * x[i] + y[i] for every i.",
            {
                "shared": "void axpy(long n, double a, const double *x, double *y);",
                "mpi": "void axpy_mpi(long n_local, double a, const double *x_local, "
                "double *y_local, MPI_Comm comm);",
                "cuda": "void axpy_cuda(long n, double a, const double *d_x, double *d_y);",
            },
            {
                "shared": _SHARED,
                "mpi": "x and y are block-distributed: every rank receives only its own block "
                "(n_local elements) of x and y and must update its block of y in place. "
                + _MPI_BLOCKS,
                "cuda": _CUDA,
            },
            "n = 2,000,000",
        ),
        Problem(
            "gemv",
            "Dense matrix-vector product",
            "Compute y = A x, where A is an m x n matrix stored row-major (A[i*n + j]), x has n "
            "elements and y has m elements. y arrives uninitialised: overwrite every element.",
            {
                "shared": "void gemv(int m, int n, const double *A, const double *x, double *y);",
                "mpi": "void gemv_mpi(int m, int n, const double *A, const double *x, double *y, "
                "MPI_Comm comm);",
                "cuda": "void gemv_cuda(int m, int n, const double *d_A, const double *d_x, "
                "double *d_y);",
            },
            {
                "shared": _SHARED,
                "mpi": "Every rank holds a complete copy of A and x. Every rank passes a y buffer "
                "of m elements; the complete result must be in y on rank 0 when the function "
                "returns (y on other ranks is ignored).",
                "cuda": _CUDA,
            },
            "m = n = 2000",
        ),
        Problem(
            "gemm",
            "Dense matrix-matrix product",
            "Compute C = A B for n x n matrices stored row-major. C arrives uninitialised: "
            "overwrite every element.",
            {
                "shared": "void gemm(int n, const double *A, const double *B, double *C);",
                "mpi": "void gemm_mpi(int n, const double *A, const double *B, double *C, "
                "MPI_Comm comm);",
                "cuda": "void gemm_cuda(int n, const double *d_A, const double *d_B, double *d_C);",
            },
            {
                "shared": _SHARED,
                "mpi": "Only rank 0 holds the data: on rank 0, A, B and C are n*n arrays; on "
                "every other rank A, B and C are NULL. Distribute the work yourself; the "
                "complete C must be on rank 0 when the function returns.",
                "cuda": _CUDA,
            },
            "n = 320",
        ),
        Problem(
            "spmv",
            "Sparse matrix-vector product (CSR)",
            "Compute y = A x for a square n x n sparse matrix A in CSR format with 0-based "
            "indices: the nonzeros of row i are vals[k] at column col_idx[k] for k in "
            "row_ptr[i] .. row_ptr[i+1]-1. Columns within a row are not sorted and may repeat "
            "(repeated entries add up). y arrives uninitialised.",
            {
                "shared": "void spmv(int n, const int *row_ptr, const int *col_idx, "
                "const double *vals, const double *x, double *y);",
                "mpi": "void spmv_mpi(int n, int nrows_local, const int *row_ptr, "
                "const int *col_idx, const double *vals, const double *x_local, "
                "double *y_local, MPI_Comm comm);",
                "cuda": "void spmv_cuda(int n, const int *d_row_ptr, const int *d_col_idx, "
                "const double *d_vals, const double *d_x, double *d_y);",
            },
            {
                "shared": _SHARED,
                "mpi": "Rows are block-distributed: each rank holds the CSR arrays of its own "
                "nrows_local rows only (row_ptr has nrows_local+1 entries and starts at 0; "
                "col_idx holds GLOBAL column indices 0..n-1). x is distributed with the same "
                "blocks (x_local holds the entries of x whose indices equal the rank's row "
                "indices), and each rank must write its own rows of y into y_local. Columns "
                "refer to entries of x owned by any rank. " + _MPI_BLOCKS,
                "cuda": _CUDA,
            },
            "n = 300,000 rows, 3-13 nonzeros per row",
        ),
        Problem(
            "jacobi",
            "2-D Jacobi stencil",
            "u is an n x n grid stored row-major. Perform `iters` Jacobi sweeps: in each sweep "
            "every interior point (1 <= i, j <= n-2) becomes 0.25 * (up + down + left + right) "
            "computed from the values of the PREVIOUS sweep; boundary rows and columns never "
            "change. On return u holds the grid after the last sweep. Allocate any scratch "
            "grid you need and free it before returning.",
            {
                "shared": "void jacobi(int n, int iters, double *u);",
                "mpi": "void jacobi_mpi(int n, int iters, int row_off, int nrows_local, "
                "double *u_local, MPI_Comm comm);",
                "cuda": "void jacobi_cuda(int n, int iters, double *d_u);",
            },
            {
                "shared": _SHARED,
                "mpi": "Rows are block-distributed: u_local holds global rows row_off .. "
                "row_off+nrows_local-1 (nrows_local x n, row-major, no halo rows). Exchange "
                "halo rows with neighbouring ranks as needed; global rows 0 and n-1 are "
                "boundary. Every rank holds at least one row. On return each rank's u_local "
                "holds its rows of the final grid. " + _MPI_BLOCKS,
                "cuda": _CUDA + " d_u is the n*n grid.",
            },
            "n = 512, iters = 100",
        ),
        Problem(
            "cg",
            "Conjugate gradient",
            "Solve A x = b with the conjugate gradient method, where A is a symmetric positive "
            "definite n x n sparse matrix in CSR format (0-based; row i's nonzeros are vals[k] "
            "at column col_idx[k] for k in row_ptr[i] .. row_ptr[i+1]-1). Start from x = 0 and "
            "iterate until ||b - A x||_2 <= tol * ||b||_2 or max_iter iterations; return the "
            "number of iterations. The answer is judged by the true relative residual "
            "(accepted up to 2 * tol).",
            {
                "shared": "int cg(int n, const int *row_ptr, const int *col_idx, "
                "const double *vals, const double *b, double *x, double tol, int max_iter);",
                "mpi": "int cg_mpi(int n, const int *row_ptr, const int *col_idx, "
                "const double *vals, const double *b, double *x, double tol, int max_iter, "
                "MPI_Comm comm);",
                "cuda": "int cg_cuda(int n, const int *d_row_ptr, const int *d_col_idx, "
                "const double *d_vals, const double *d_b, double *d_x, double tol, "
                "int max_iter);",
            },
            {
                "shared": _SHARED + " x has n elements (zero on entry).",
                "mpi": "Every rank holds a complete copy of the matrix and of b, and an x buffer "
                "of n elements (zero on entry). Split the work across ranks; the complete "
                "solution must be in x on rank 0 when the function returns. The returned "
                "iteration count is not judged.",
                "cuda": _CUDA + " tol and max_iter are host values.",
            },
            "n = 10,000 (a 100 x 100 grid operator, 5 nonzeros per row), tol = 1e-8",
        ),
        Problem(
            "maxloc",
            "Maximum with index (reduction)",
            "Return the largest value of x and store in *idx the SMALLEST index at which it "
            "occurs (the maximum may occur more than once).",
            {
                "shared": "double max_loc(long n, const double *x, long *idx);",
                "mpi": "double max_loc_mpi(long n_local, const double *x_local, long *idx, "
                "MPI_Comm comm);",
                "cuda": "double max_loc_cuda(long n, const double *d_x, long *idx);",
            },
            {
                "shared": _SHARED,
                "mpi": "x is block-distributed: each rank holds its n_local elements. *idx is a "
                "GLOBAL index. The return value and *idx are read on rank 0 only. " + _MPI_BLOCKS,
                "cuda": _CUDA + " idx is a HOST pointer; the return value is a host double.",
            },
            "n = 4,000,000",
        ),
        Problem(
            "scan",
            "Inclusive prefix sum",
            "Compute the inclusive prefix sum y[i] = x[0] + x[1] + ... + x[i] of 64-bit "
            "integers (results are compared exactly). y arrives uninitialised.",
            {
                "shared": "void prefix_sum(long n, const long long *x, long long *y);",
                "mpi": "void prefix_sum_mpi(long n_local, const long long *x_local, "
                "long long *y_local, MPI_Comm comm);",
                "cuda": "void prefix_sum_cuda(long n, const long long *d_x, long long *d_y);",
            },
            {
                "shared": _SHARED,
                "mpi": "x and y are block-distributed: each rank holds its n_local elements and "
                "must write into y_local the GLOBAL prefix sums of its block (including the "
                "sums of all lower ranks' blocks). " + _MPI_BLOCKS,
                "cuda": _CUDA,
            },
            "n = 4,000,000",
        ),
        Problem(
            "histogram",
            "Histogram",
            "Count how many times each value b in 0 .. nbins-1 occurs in data (every value is "
            "in that range); counts[b] receives the count. counts arrives filled with garbage: "
            "set every bin.",
            {
                "shared": "void histogram(long n, const int *data, int nbins, long long *counts);",
                "mpi": "void histogram_mpi(long n_local, const int *data_local, int nbins, "
                "long long *counts, MPI_Comm comm);",
                "cuda": "void histogram_cuda(long n, const int *d_data, int nbins, "
                "long long *d_counts);",
            },
            {
                "shared": _SHARED,
                "mpi": "data is block-distributed: each rank holds its n_local values. Every "
                "rank passes a counts buffer of nbins elements; the complete histogram must be "
                "in counts on rank 0 (counts on other ranks is ignored). " + _MPI_BLOCKS,
                "cuda": _CUDA,
            },
            "n = 4,000,000, nbins = 256 (one bin receives about a quarter of the values)",
        ),
    ]
}

_MODEL_TEXT = {
    "serial": "Write a correct, efficient sequential C implementation (no threads, no MPI).",
    "openmp": "Parallelise it with OpenMP in C. It is compiled with -fopenmp and run with "
    "OMP_NUM_THREADS set (1 and 2 threads); use the threads the runtime gives you.",
    "mpi": "Parallelise it with MPI in C (compiled with mpicc, run with mpirun at 1, 2 and 4 "
    "ranks). MPI is already initialised by the caller: do not call MPI_Init or MPI_Finalize, "
    "and use the communicator `comm` you are given. Every rank calls your function.",
    "mpi-openmp": "Parallelise it with MPI and OpenMP together in C (compiled with mpicc "
    "-fopenmp, run with 1 and 2 ranks of 2 OpenMP threads each). MPI is already initialised by "
    "the caller: do not call MPI_Init or MPI_Finalize, and use the communicator `comm` you are "
    "given. Every rank calls your function; only the calling thread makes MPI calls.",
    "cuda": "Write it in CUDA C++ (compiled with nvcc). Provide the host function below, which "
    'launches your kernel(s). Give it ordinary C++ linkage (no extern "C").',
}


def build_prompt(problem: Problem, variant: str) -> str:
    family = VARIANTS[variant][0]
    lang = "cuda" if variant == "cuda" else "c"
    header = {"mpi": "#include <mpi.h>\n", "cuda": ""}.get(family, "")
    return (
        f"# {problem.title} ({variant})\n\n"
        f"{problem.statement}\n\n"
        f"{_MODEL_TEXT[variant]}\n\n"
        f"Implement exactly this function:\n\n```{lang}\n{header}{problem.signatures[family]}\n```\n\n"
        f"Data contract: {problem.contracts[family]}\n\n"
        f"Problem size used for testing and timing: {problem.size}. Your code must also be "
        "correct for other sizes.\n\n"
        "Rules: answer with ONE complete source file in a single fenced code block. Include the "
        "headers you use. Do not write main(); a harness of ours calls your function, checks the "
        "result against a reference and times it. Helper functions and kernels are allowed "
        "(make them static). Do not print anything.\n"
    )
