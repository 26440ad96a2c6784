#pragma once
#include <vector>

/* Test fixture baseline: the sum of the squares of x. */
double NO_INLINE correctSumOfSquares(std::vector<double> const& x) {
    double total = 0.0;
    for (double v : x) {
        total += v * v;
    }
    return total;
}
