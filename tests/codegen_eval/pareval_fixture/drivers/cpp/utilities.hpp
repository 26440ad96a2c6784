// Test fixture: helpers shared by the benchmark drivers.
#pragma once
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <vector>

#if !defined(USE_SERIAL) && !defined(USE_OMP) && !defined(USE_MPI) && !defined(USE_MPI_OMP) && !defined(USE_KOKKOS) && !defined(USE_CUDA) && !defined(USE_HIP)
#error "fixture: build with -DUSE_<MODEL>"
#endif
#if !defined(DRIVER_PROBLEM_SIZE)
#error "fixture: build with -DDRIVER_PROBLEM_SIZE"
#endif
#if !defined(MAX_VALIDATION_ATTEMPTS)
#define MAX_VALIDATION_ATTEMPTS 2
#endif

#define NO_OPTIMIZE __attribute__((optimize("O0")))
#define NO_INLINE __attribute__((noinline))

#if defined(USE_MPI) || defined(USE_MPI_OMP)
#include <mpi.h>
#define IS_ROOT(rank) ((rank) == 0)
#define BCAST(vec, dtype) MPI_Bcast((vec).data(), (vec).size(), MPI_##dtype, 0, MPI_COMM_WORLD)
#define BCAST_PTR(ptr, size, dtype) MPI_Bcast(ptr, size, MPI_##dtype, 0, MPI_COMM_WORLD)
#define SYNC() MPI_Barrier(MPI_COMM_WORLD)
#define GET_RANK(rank) MPI_Comm_rank(MPI_COMM_WORLD, &(rank))
#else
#define IS_ROOT(rank) true
#define BCAST(vec, dtype)
#define BCAST_PTR(ptr, size, dtype)
#define SYNC()
#define GET_RANK(rank) rank = 0
#endif

template <typename T>
void fillUniform(std::vector<T> &v, double lo, double hi) {
    for (auto &e : v) e = static_cast<T>(lo + (hi - lo) * (std::rand() / (double)RAND_MAX));
}

inline bool closeEnough(double a, double b, double tol = 1e-6) { return std::fabs(a - b) <= tol; }
