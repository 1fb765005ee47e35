// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "stats.hpp"

#include <algorithm>

namespace rcnet::bench {

double median(std::vector<double> v) {
  const std::size_t n = v.size();
  if (n == 0)
    return 0;
  std::sort(v.begin(), v.end());
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double minimum(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

}  // namespace rcnet::bench
