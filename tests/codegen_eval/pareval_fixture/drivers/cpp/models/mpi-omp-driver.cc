// Test fixture: main() for MPI+OpenMP builds. Optional argument: thread count.
#define FIXTURE_WITH_OMP 1
#include "mpi-driver.cc"
