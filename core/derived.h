// Derived metrics (`expr:` in a workload): an arithmetic expression over other metrics of the same
// step, parsed once into a tree and evaluated per step; and the GPU peak table behind
// peak_tflops('gpu', 'dtype') (dense Tensor Core / CUDA core peaks from NVIDIA's datasheets,
// docs/derived_metrics.md). Pure; errors are values.
//
// Language: numbers (12, 0.5, 7e9), metric names, + - * /, unary minus, ^ (power, right
// associative, binds tighter than unary minus: -2^2 = -4), parentheses, min(a, b), max(a, b),
// peak_tflops('gpu', 'dtype') (a constant, looked up when parsed). Nesting deeper than
// kMaxExprDepth is refused. `{param}` placeholders are bound before parsing (core/template.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tunectl {

inline constexpr int kMaxExprDepth = 64;
inline constexpr size_t kMaxExprLength = 4096;

struct GpuPeak {
  std::string gpu;    // lower case, e.g. "h100-sxm"
  std::string dtype;  // "fp32", "tf32", "bf16", "fp16", "fp8"
  double tflops = 0;  // dense (no sparsity), per GPU
};

// The whole table, by gpu then dtype.
const std::vector<GpuPeak>& GpuPeakTable();
// Case-insensitive lookup. InvalidArgument listing the known GPUs (unknown gpu) or the GPU's
// dtypes (unknown dtype).
Result<double> PeakTflops(std::string_view gpu, std::string_view dtype);

class DerivedExpr {
 public:
  // InvalidArgument: `expr "<text>": at position N: expected …, got …` (N counts from 1).
  static Result<DerivedExpr> Parse(std::string_view text);

  const std::string& text() const { return text_; }
  // The metric names it reads, each once, in order of first use.
  const std::vector<std::string>& inputs() const { return inputs_; }

  // values[i] is the value of inputs()[i]. nullopt when a division by zero happens or a result
  // (final or intermediate) is not finite.
  std::optional<double> Evaluate(const std::vector<double>& values) const;
  // nullopt also when an input is missing from `values`.
  std::optional<double> Evaluate(const std::map<std::string, double>& values) const;

 private:
  enum class Op { kNum, kVar, kNeg, kAdd, kSub, kMul, kDiv, kPow, kMin, kMax };
  struct Node {
    Op op = Op::kNum;
    double num = 0;  // kNum
    int var = 0;     // kVar: index into inputs_
    int a = -1, b = -1;
  };
  friend class ExprParser;
  std::optional<double> Eval(int node, const std::vector<double>& values) const;

  std::string text_;
  std::vector<std::string> inputs_;
  std::vector<Node> nodes_;
  int root_ = -1;
};

// Orders derived metrics so that each comes after the derived metrics it reads. `inputs`: a
// derived metric's name -> the names it reads (names that are not keys are measured metrics).
// InvalidArgument "metrics.<name>.expr: a cycle: a -> b -> a" when they depend on each other.
Result<std::vector<std::string>> OrderDerived(
    const std::map<std::string, std::vector<std::string>>& inputs);

}  // namespace tunectl
