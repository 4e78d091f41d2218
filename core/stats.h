// Descriptive statistics and run/baseline summaries. Pure functions over value vectors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tunectl {

struct Descriptive {
  int n = 0;
  double median = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n-1); 0 when n < 2
  double cv = 0;      // stddev / |mean|; 0 when mean == 0
  double min = 0;
  double max = 0;
};

// NaN and infinite values are ignored.
Descriptive Describe(std::vector<double> values);
double Median(std::vector<double> values);

struct StepValue {
  int64_t step = 0;
  double value = 0;
  bool operator==(const StepValue&) const = default;
};

}  // namespace tunectl
