// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Order statistics of a benchmark's samples.

#include <vector>

namespace rcnet::bench {

// The median: the middle sample, or the mean of the two middle ones for an
// even count; 0 for no samples.
double median(std::vector<double> v);

// The smallest sample; 0 for no samples.
double minimum(const std::vector<double>& v);

}  // namespace rcnet::bench
