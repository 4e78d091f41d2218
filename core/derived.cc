#include "core/derived.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

namespace tunectl {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string JoinNames(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

bool IdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool IdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

// Dense peaks in TFLOP/s per GPU; sources in docs/derived_metrics.md. Where a datasheet gives only
// the figure with 2:4 sparsity, the dense figure is half of it.
const std::vector<GpuPeak>& GpuPeakTable() {
  static const std::vector<GpuPeak> table = {
      {"a10", "bf16", 125},        {"a10", "fp16", 125},        {"a10", "fp32", 31.2},
      {"a10", "tf32", 62.5},       {"a100-pcie", "bf16", 312},  {"a100-pcie", "fp16", 312},
      {"a100-pcie", "fp32", 19.5}, {"a100-pcie", "tf32", 156},  {"a100-sxm", "bf16", 312},
      {"a100-sxm", "fp16", 312},   {"a100-sxm", "fp32", 19.5},  {"a100-sxm", "tf32", 156},
      {"b200", "bf16", 2250},      {"b200", "fp16", 2250},      {"b200", "fp32", 75},
      {"b200", "fp8", 4500},       {"b200", "tf32", 1125},      {"h100-pcie", "bf16", 756},
      {"h100-pcie", "fp16", 756},  {"h100-pcie", "fp32", 51},   {"h100-pcie", "fp8", 1513},
      {"h100-pcie", "tf32", 378},  {"h100-sxm", "bf16", 989.4}, {"h100-sxm", "fp16", 989.4},
      {"h100-sxm", "fp32", 67},    {"h100-sxm", "fp8", 1978.9}, {"h100-sxm", "tf32", 494.7},
      {"h200", "bf16", 989.4},     {"h200", "fp16", 989.4},     {"h200", "fp32", 67},
      {"h200", "fp8", 1978.9},     {"h200", "tf32", 494.7},     {"l4", "bf16", 121},
      {"l4", "fp16", 121},         {"l4", "fp32", 30.3},        {"l4", "fp8", 242.5},
      {"l4", "tf32", 60},          {"l40s", "bf16", 362.05},    {"l40s", "fp16", 362.05},
      {"l40s", "fp32", 91.6},      {"l40s", "fp8", 733},        {"l40s", "tf32", 183},
      {"v100-pcie", "fp16", 112},  {"v100-pcie", "fp32", 14},   {"v100-sxm2", "fp16", 125},
      {"v100-sxm2", "fp32", 15.7},
  };
  return table;
}

Result<double> PeakTflops(std::string_view gpu, std::string_view dtype) {
  const std::string g = Lower(gpu), d = Lower(dtype);
  std::vector<std::string> gpus, dtypes;
  for (const auto& e : GpuPeakTable()) {
    if (gpus.empty() || gpus.back() != e.gpu) gpus.push_back(e.gpu);
    if (e.gpu != g) continue;
    if (e.dtype == d) return e.tflops;
    dtypes.push_back(e.dtype);
  }
  if (dtypes.empty())
    return Status::InvalidArgument("peak_tflops: unknown GPU '" + std::string(gpu) +
                                   "'; known: " + JoinNames(gpus));
  return Status::InvalidArgument("peak_tflops: the table has no " + std::string(dtype) +
                                 " peak for " + g + "; its dtypes: " + JoinNames(dtypes));
}

// Recursive descent over the text; one pass, so linear in its length. Depth is bounded by
// kMaxExprDepth, which also bounds the evaluator's recursion.
class ExprParser {
 public:
  ExprParser(std::string_view text, DerivedExpr* out) : t_(text), x_(out) {}

  Status Run() {
    if (t_.size() > kMaxExprLength)
      return Status::InvalidArgument("expr: longer than " + std::to_string(kMaxExprLength) +
                                     " characters");
    int root = -1;
    if (auto s = Expr(&root); !s.ok()) return s;
    Skip();
    if (pos_ < t_.size()) return Expected("an operator (+ - * / ^) or the end");
    x_->root_ = root;
    return Status::Ok();
  }

 private:
  using Op = DerivedExpr::Op;

  void Skip() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    Skip();
    if (pos_ < t_.size() && t_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status Fail(size_t at, const std::string& what) const {
    return Status::InvalidArgument("expr \"" + std::string(t_) + "\": at position " +
                                   std::to_string(at + 1) + ": " + what);
  }
  Status Expected(const std::string& what) {
    Skip();
    std::string got = "the end";
    if (pos_ < t_.size()) {
      got = "'" + std::string(1, t_[pos_]) + "'";
      if (t_[pos_] == '{') got += " (a {param} placeholder has no value here)";
      if (t_.substr(pos_, 2) == "**") got += " (the power operator is ^)";
    }
    return Fail(pos_, "expected " + what + ", got " + got);
  }
  int Add(DerivedExpr::Node n) {
    x_->nodes_.push_back(n);
    return static_cast<int>(x_->nodes_.size()) - 1;
  }
  int Binary(Op op, int a, int b) {
    DerivedExpr::Node n;
    n.op = op;
    n.a = a;
    n.b = b;
    return Add(n);
  }
  Status Enter() {
    if (++depth_ > kMaxExprDepth)
      return Fail(pos_, "nested deeper than " + std::to_string(kMaxExprDepth) + " levels");
    return Status::Ok();
  }

  // expr := term (('+' | '-') term)*
  Status Expr(int* out) {
    if (auto s = Enter(); !s.ok()) return s;
    if (auto s = Term(out); !s.ok()) return s;
    for (;;) {
      Op op;
      if (Eat('+'))
        op = Op::kAdd;
      else if (Eat('-'))
        op = Op::kSub;
      else
        break;
      int rhs = -1;
      if (auto s = Term(&rhs); !s.ok()) return s;
      *out = Binary(op, *out, rhs);
    }
    --depth_;
    return Status::Ok();
  }
  // term := unary (('*' | '/') unary)*
  Status Term(int* out) {
    if (auto s = Unary(out); !s.ok()) return s;
    for (;;) {
      Skip();
      Op op;
      if (t_.substr(pos_, 2) == "**")
        return Fail(pos_, "'**' is not an operator; the power operator is ^");
      if (Eat('*'))
        op = Op::kMul;
      else if (Eat('/'))
        op = Op::kDiv;
      else
        break;
      int rhs = -1;
      if (auto s = Unary(&rhs); !s.ok()) return s;
      *out = Binary(op, *out, rhs);
    }
    return Status::Ok();
  }
  // unary := '-' unary | '+' unary | power
  Status Unary(int* out) {
    if (Eat('-')) {
      if (auto s = Enter(); !s.ok()) return s;
      int a = -1;
      if (auto s = Unary(&a); !s.ok()) return s;
      DerivedExpr::Node n;
      n.op = Op::kNeg;
      n.a = a;
      *out = Add(n);
      --depth_;
      return Status::Ok();
    }
    if (Eat('+')) {
      if (auto s = Enter(); !s.ok()) return s;
      if (auto s = Unary(out); !s.ok()) return s;
      --depth_;
      return Status::Ok();
    }
    return Power(out);
  }
  // power := primary ('^' unary)?   (right associative)
  Status Power(int* out) {
    if (auto s = Primary(out); !s.ok()) return s;
    if (!Eat('^')) return Status::Ok();
    if (auto s = Enter(); !s.ok()) return s;
    int rhs = -1;
    if (auto s = Unary(&rhs); !s.ok()) return s;
    *out = Binary(Op::kPow, *out, rhs);
    --depth_;
    return Status::Ok();
  }
  Status Quoted(std::string* out) {
    Skip();
    if (pos_ >= t_.size() || (t_[pos_] != '\'' && t_[pos_] != '"'))
      return Expected("a quoted name like 'h100-sxm'");
    const char q = t_[pos_];
    const size_t end = t_.find(q, pos_ + 1);
    if (end == std::string_view::npos) return Fail(pos_, "a quote that is never closed");
    *out = std::string(t_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return Status::Ok();
  }
  // primary := number | name | name '(' args ')' | '(' expr ')'
  Status Primary(int* out) {
    Skip();
    if (pos_ >= t_.size()) return Expected("a number, a metric name, '(' or '-'");
    const char c = t_[pos_];
    if (c == '(') {
      ++pos_;
      if (auto s = Expr(out); !s.ok()) return s;
      if (!Eat(')')) return Expected("')'");
      return Status::Ok();
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Number(out);
    if (!IdentStart(c)) return Expected("a number, a metric name, '(' or '-'");
    const size_t start = pos_;
    while (pos_ < t_.size() && IdentChar(t_[pos_])) ++pos_;
    const std::string name(t_.substr(start, pos_ - start));
    Skip();
    if (pos_ < t_.size() && t_[pos_] == '(') {
      ++pos_;
      if (name == "peak_tflops") {
        std::string gpu, dtype;
        const size_t at = pos_;
        if (auto s = Quoted(&gpu); !s.ok()) return s;
        if (!Eat(',')) return Expected("',' and the dtype");
        if (auto s = Quoted(&dtype); !s.ok()) return s;
        if (!Eat(')')) return Expected("')'");
        auto peak = PeakTflops(gpu, dtype);
        if (!peak.ok()) return Fail(at, peak.status().message());
        DerivedExpr::Node n;
        n.num = *peak;
        *out = Add(n);
        return Status::Ok();
      }
      if (name != "min" && name != "max")
        return Fail(start, "unknown function '" + name + "'; functions: min, max, peak_tflops");
      int a = -1, b = -1;
      if (auto s = Expr(&a); !s.ok()) return s;
      if (!Eat(',')) return Expected("',' and a second argument of " + name);
      if (auto s = Expr(&b); !s.ok()) return s;
      if (!Eat(')')) return Expected("')' (" + name + " takes two arguments)");
      *out = Binary(name == "min" ? Op::kMin : Op::kMax, a, b);
      return Status::Ok();
    }
    auto& inputs = x_->inputs_;
    auto it = std::find(inputs.begin(), inputs.end(), name);
    DerivedExpr::Node n;
    n.op = Op::kVar;
    n.var = static_cast<int>(it - inputs.begin());
    if (it == inputs.end()) inputs.push_back(name);
    *out = Add(n);
    return Status::Ok();
  }
  Status Number(int* out) {
    const size_t start = pos_;
    size_t digits = 0;
    while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) ++pos_, ++digits;
    if (pos_ < t_.size() && t_[pos_] == '.') {
      ++pos_;
      while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_])))
        ++pos_, ++digits;
    }
    if (digits == 0) return Fail(start, "expected a number, got '.'");
    if (pos_ < t_.size() && (t_[pos_] == 'e' || t_[pos_] == 'E')) {
      size_t e = pos_ + 1;
      if (e < t_.size() && (t_[e] == '+' || t_[e] == '-')) ++e;
      if (e >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[e])))
        return Fail(e, "expected the exponent's digits after '" +
                           std::string(t_.substr(start, e - start)) + "'");
      while (e < t_.size() && std::isdigit(static_cast<unsigned char>(t_[e]))) ++e;
      pos_ = e;
    }
    double v = 0;
    auto [end, ec] = std::from_chars(t_.data() + start, t_.data() + pos_, v);
    if (ec != std::errc() || end != t_.data() + pos_ || !std::isfinite(v))
      return Fail(start, "the number '" + std::string(t_.substr(start, pos_ - start)) +
                             "' is out of range");
    if (pos_ < t_.size() && IdentStart(t_[pos_])) return Expected("an operator after a number");
    DerivedExpr::Node n;
    n.num = v;
    *out = Add(n);
    return Status::Ok();
  }

  std::string_view t_;
  DerivedExpr* x_;
  size_t pos_ = 0;
  int depth_ = 0;
};

Result<DerivedExpr> DerivedExpr::Parse(std::string_view text) {
  DerivedExpr x;
  x.text_ = std::string(text);
  ExprParser p(text, &x);
  if (auto s = p.Run(); !s.ok()) return s;
  return x;
}

std::optional<double> DerivedExpr::Eval(int node, const std::vector<double>& values) const {
  const Node& n = nodes_[static_cast<size_t>(node)];
  double r = 0;
  switch (n.op) {
    case Op::kNum: r = n.num; break;
    case Op::kVar:
      if (static_cast<size_t>(n.var) >= values.size()) return std::nullopt;
      r = values[static_cast<size_t>(n.var)];
      break;
    case Op::kNeg: {
      auto a = Eval(n.a, values);
      if (!a) return std::nullopt;
      r = -*a;
      break;
    }
    default: {
      auto a = Eval(n.a, values);
      if (!a) return std::nullopt;
      auto b = Eval(n.b, values);
      if (!b) return std::nullopt;
      switch (n.op) {
        case Op::kAdd: r = *a + *b; break;
        case Op::kSub: r = *a - *b; break;
        case Op::kMul: r = *a * *b; break;
        case Op::kDiv:
          if (*b == 0) return std::nullopt;
          r = *a / *b;
          break;
        case Op::kPow: r = std::pow(*a, *b); break;
        case Op::kMin: r = std::min(*a, *b); break;
        case Op::kMax: r = std::max(*a, *b); break;
        default: return std::nullopt;
      }
    }
  }
  if (!std::isfinite(r)) return std::nullopt;
  return r;
}

std::optional<double> DerivedExpr::Evaluate(const std::vector<double>& values) const {
  if (root_ < 0 || values.size() < inputs_.size()) return std::nullopt;
  return Eval(root_, values);
}

std::optional<double> DerivedExpr::Evaluate(const std::map<std::string, double>& values) const {
  std::vector<double> v;
  v.reserve(inputs_.size());
  for (const auto& name : inputs_) {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    v.push_back(it->second);
  }
  return Evaluate(v);
}

Result<std::vector<std::string>> OrderDerived(
    const std::map<std::string, std::vector<std::string>>& inputs) {
  std::vector<std::string> order;
  std::map<std::string, int> state;  // 1 = on the path, 2 = done
  std::vector<std::string> path;
  // Depth-first; the depth is at most the number of derived metrics.
  auto visit = [&](auto& self, const std::string& name) -> Status {
    int& s = state[name];
    if (s == 2) return Status::Ok();
    if (s == 1) {
      std::string cycle;
      auto from = std::find(path.begin(), path.end(), name);
      for (auto it = from; it != path.end(); ++it) cycle += *it + " -> ";
      return Status::InvalidArgument("metrics." + name + ".expr: a cycle: " + cycle + name);
    }
    s = 1;
    path.push_back(name);
    for (const auto& in : inputs.at(name))
      if (inputs.count(in))
        if (auto st = self(self, in); !st.ok()) return st;
    path.pop_back();
    state[name] = 2;
    order.push_back(name);
    return Status::Ok();
  };
  for (const auto& [name, _] : inputs)
    if (auto st = visit(visit, name); !st.ok()) return st;
  return order;
}

}  // namespace tunectl
