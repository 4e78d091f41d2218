#include "core/metrics.h"

#include <re2/re2.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/log_formats.h"

namespace tunectl {

bool ParseMetricValue(std::string_view text, double* out) {
  std::string s;
  s.reserve(text.size());
  for (char c : text)
    if (c != ',') s.push_back(c);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  if (start < s.size() && s[start] == '+') ++start;
  if (start == s.size()) return false;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data() + start, s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  *out = v;
  return true;
}

Result<std::unique_ptr<MetricExtractor>> MetricExtractor::Create(
    const std::vector<MetricRule>& rules) {
  std::unique_ptr<MetricExtractor> x(new MetricExtractor());
  for (const auto& r : rules) {
    Compiled c;
    c.rule = r;
    if (!r.pattern.empty()) {
      c.re = std::make_unique<re2::RE2>(r.pattern, re2::RE2::Quiet);
      if (!c.re->ok())
        return Status::InvalidArgument("metrics." + r.name + ".pattern: " + c.re->error());
      if (c.re->NumberOfCapturingGroups() < 1 && !IsSkipRule(r.name))
        return Status::InvalidArgument("metrics." + r.name + ".pattern: needs a capture group");
      const auto& named = c.re->NamedCapturingGroups();
      if (IsSkipRule(r.name)) c.value_group = 0, c.step_group = c.re->NumberOfCapturingGroups() > 0;
      if (auto it = named.find("value"); it != named.end()) c.value_group = it->second;
      if (auto it = named.find("step"); it != named.end()) c.step_group = it->second;
    } else if (!r.json_key.empty()) {
      x->has_json_ = true;
    } else if (!r.parser.empty()) {
      if (r.field.empty())
        return Status::InvalidArgument("metrics." + r.name + ".field: empty; the " + r.parser +
                                       " format's field this metric reads");
      if (!x->parsers_.count(r.parser)) {
        auto p = LogFormatParser::Create(r.parser);
        if (!p.ok())
          return Status::InvalidArgument("metrics." + r.name + ".parser: " + p.status().message());
        x->parsers_[r.parser] = std::move(*p);
      }
    } else if (!r.prometheus.empty() || !r.tensorboard.empty()) {
      continue;  // read by the agent's side sources, not from lines
    } else if (!r.expr.empty()) {
      auto e = DerivedExpr::Parse(r.expr);
      if (!e.ok())
        return Status::InvalidArgument("metrics." + r.name + ".expr: " + e.status().message());
      x->derived_.push_back({r.name, std::move(*e)});
      continue;  // computed from other samples, not read from lines
    } else {
      return Status::InvalidArgument("metrics." + r.name +
                                     ": no pattern, json key, parser or expr");
    }
    x->rules_.push_back(std::move(c));
  }
  if (x->derived_.empty()) return x;
  std::set<std::string> names;
  for (const auto& r : rules)
    if (!IsSkipRule(r.name)) names.insert(r.name);
  std::map<std::string, std::vector<std::string>> inputs;
  std::map<std::string, DerivedExpr> by_name;
  for (auto& d : x->derived_) {
    for (const auto& in : d.expr.inputs()) {
      if (!names.count(in))
        return Status::InvalidArgument("metrics." + d.name + ".expr: " + in +
                                       " is not a metric of this run");
      x->feeds_.insert(in);
    }
    inputs[d.name] = d.expr.inputs();
    by_name.emplace(d.name, std::move(d.expr));
  }
  auto order = OrderDerived(inputs);
  if (!order.ok()) return order.status();
  x->derived_.clear();
  for (const auto& name : *order) x->derived_.push_back({name, std::move(by_name.at(name))});
  return x;
}

void MetricExtractor::EmitDerived(size_t first, std::vector<ExtractedSample>* out) {
  std::set<int64_t> touched;
  const size_t end = out->size();
  for (size_t i = first; i < end; ++i) {
    const ExtractedSample& s = (*out)[i];
    if (!feeds_.count(s.metric)) continue;
    PendingStep& p = pending_[s.step];
    if (p.tried.empty()) p.tried.assign(derived_.size(), false);
    p.values.emplace(s.metric, s.value);  // the first value at a step counts
    touched.insert(s.step);
  }
  for (int64_t step : touched) {
    auto it = pending_.find(step);
    if (it == pending_.end()) continue;
    PendingStep& p = it->second;
    for (size_t d = 0; d < derived_.size(); ++d) {  // dependency order: derived of derived
      if (p.tried[d]) continue;
      bool ready = true;
      for (const auto& in : derived_[d].expr.inputs()) ready = ready && p.values.count(in) > 0;
      if (!ready) continue;
      p.tried[d] = true;
      auto v = derived_[d].expr.Evaluate(p.values);
      if (!v) continue;
      out->push_back({derived_[d].name, step, *v});
      if (feeds_.count(derived_[d].name)) p.values.emplace(derived_[d].name, *v);
    }
  }
  while (pending_.size() > kMaxPendingSteps) pending_.erase(pending_.begin());
}

MetricExtractor::~MetricExtractor() = default;

int64_t MetricExtractor::NextStep(const std::string& metric, const int64_t* explicit_step) {
  int64_t& last = last_step_[metric];
  // A counted step after the largest one a job may print stays there (int64 does not wrap).
  if (explicit_step)
    last = *explicit_step;
  else if (last < std::numeric_limits<int64_t>::max())
    ++last;
  return last;
}

void MetricExtractor::ProcessLine(std::string_view line, std::vector<ExtractedSample>* out) {
  std::string clean;
  if (line.find('\x1b') != std::string_view::npos) {
    clean = StripAnsi(line);
    line = clean;
  }
  for (size_t start = 0;;) {
    const size_t cr = line.find('\r', start);
    const size_t end = cr == std::string_view::npos ? line.size() : cr;
    if (end > start) ProcessSegment(line.substr(start, end - start), out);
    if (cr == std::string_view::npos) return;
    start = cr + 1;
  }
}

void MetricExtractor::ProcessSegment(std::string_view line, std::vector<ExtractedSample>* out) {
  const size_t first = out->size();
  for (auto& [format, parser] : parsers_) {
    parsed_.clear();
    parser->Parse(line, &parsed_);
    for (const auto& p : parsed_)
      for (const auto& c : rules_)
        if (c.rule.parser == format && c.rule.field == p.field) {
          const int64_t step = p.step;
          out->push_back({c.rule.name, NextStep(c.rule.name, step > 0 ? &step : nullptr), p.value});
        }
  }
  nlohmann::json obj;
  bool have_obj = false;
  if (has_json_) {
    size_t b = line.find_first_not_of(" \t");
    if (b != std::string_view::npos && line[b] == '{') {
      obj = nlohmann::json::parse(line.begin() + static_cast<std::ptrdiff_t>(b), line.end(),
                                  nullptr, false);
      have_obj = obj.is_object();
    }
  }
  for (auto& c : rules_) {
    if (c.re) {
      const int groups = c.re->NumberOfCapturingGroups();
      std::vector<re2::StringPiece> sp(static_cast<size_t>(groups));
      std::vector<re2::RE2::Arg> args(static_cast<size_t>(groups));
      std::vector<re2::RE2::Arg*> argp(static_cast<size_t>(groups));
      for (int i = 0; i < groups; ++i) {
        args[static_cast<size_t>(i)] = &sp[static_cast<size_t>(i)];
        argp[static_cast<size_t>(i)] = &args[static_cast<size_t>(i)];
      }
      re2::StringPiece input(line.data(), line.size());
      if (!re2::RE2::PartialMatchN(input, *c.re, argp.data(), groups)) continue;
      if (IsSkipRule(c.rule.name)) {
        int64_t step = 0;
        const auto& ss =
            c.step_group > 0 ? sp[static_cast<size_t>(c.step_group - 1)] : re2::StringPiece();
        auto [end, ec] = std::from_chars(ss.data(), ss.data() + ss.size(), step);
        if (c.step_group > 0 && ec == std::errc() && end == ss.data() + ss.size())
          out->push_back({c.rule.name, step, 1});
        else
          pending_skips_.push_back(c.rule.name);
        continue;
      }
      const auto& vs = sp[static_cast<size_t>(c.value_group - 1)];
      double v = 0;
      if (!ParseMetricValue(std::string_view(vs.data(), vs.size()), &v)) continue;
      int64_t step = 0;
      const int64_t* sptr = nullptr;
      if (c.step_group > 0) {
        const auto& ss = sp[static_cast<size_t>(c.step_group - 1)];
        auto [end, ec] = std::from_chars(ss.data(), ss.data() + ss.size(), step);
        if (ec == std::errc() && end == ss.data() + ss.size()) sptr = &step;
      }
      out->push_back({c.rule.name, NextStep(c.rule.name, sptr), v});
    } else if (have_obj) {
      auto it = obj.find(c.rule.json_key);
      if (it == obj.end()) continue;
      double v = 0;
      if (it->is_number()) {
        v = it->get<double>();
      } else if (it->is_string()) {
        if (!ParseMetricValue(it->get<std::string>(), &v)) continue;
      } else {
        continue;
      }
      int64_t step = 0;
      const int64_t* sptr = nullptr;
      if (auto s = obj.find("step"); s != obj.end() && s->is_number_integer()) {
        step = s->get<int64_t>();
        sptr = &step;
      }
      out->push_back({c.rule.name, NextStep(c.rule.name, sptr), v});
    }
  }
  if (!derived_.empty()) EmitDerived(first, out);
  if (pending_skips_.empty()) return;
  for (size_t i = first; i < out->size(); ++i) {
    if (IsSkipRule((*out)[i].metric)) continue;
    const int64_t step = (*out)[i].step;
    for (auto& tag : pending_skips_) out->push_back({std::move(tag), step, 1});
    pending_skips_.clear();
    return;
  }
}

}  // namespace tunectl
