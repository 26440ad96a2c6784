#pragma once
#include <vector>

// struct Point comes from the prompt (generated-code.hpp is included first)

/* Test fixture baseline: multiply both coordinates of every point by factor. */
void NO_INLINE correctScalePoints(std::vector<Point> &points, double factor) {
    for (auto &p : points) {
        p.x *= factor;
        p.y *= factor;
    }
}
