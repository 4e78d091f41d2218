#include "core/stats.h"

#include <algorithm>
#include <cmath>

namespace tunectl {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

Descriptive Describe(std::vector<double> values) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [](double x) { return !std::isfinite(x); }),
      values.end());
  Descriptive d;
  d.n = static_cast<int>(values.size());
  if (values.empty()) return d;
  auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  d.min = *mn;
  d.max = *mx;
  double sum = 0;
  for (double x : values) sum += x;
  d.mean = sum / d.n;
  if (d.n >= 2) {
    double ss = 0;
    for (double x : values) ss += (x - d.mean) * (x - d.mean);
    d.stddev = std::sqrt(ss / (d.n - 1));
  }
  d.cv = d.mean != 0 ? d.stddev / std::fabs(d.mean) : 0;
  d.median = Median(std::move(values));
  return d;
}

}  // namespace tunectl
