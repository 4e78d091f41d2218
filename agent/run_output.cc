#include "agent/run_output.h"

#include <ostream>

#include "core/text.h"

namespace tunectl {
namespace {
constexpr size_t kTailLines = 20;
constexpr size_t kTailBytes = 4096;
}  // namespace

Result<std::unique_ptr<RunOutput>> RunOutput::Create(const v1::Assign& a, int batch_max_samples,
                                                     int batch_max_ms, Emit emit) {
  std::vector<MetricRule> rules;
  for (const auto& m : a.metrics())
    rules.push_back({m.name(), m.pattern(), m.json_key(), m.parser(), m.field()});
  auto extractor = MetricExtractor::Create(rules);
  if (!extractor.ok()) return extractor.status();
  std::unique_ptr<RunOutput> out(new RunOutput());
  out->run_id_ = a.run_id();
  out->attempt_ = a.attempt();
  out->batch_max_samples_ = batch_max_samples;
  out->batch_max_ms_ = batch_max_ms;
  out->emit_ = std::move(emit);
  out->extractor_ = std::move(*extractor);
  return out;
}

void RunOutput::ResumeAfter(int64_t sent_seq, int64_t sent_lines) {
  seq_ = sent_seq;
  skip_through_ = sent_lines;
}

void RunOutput::Line(Stream s, std::string_view line, std::ostream* log) {
  ++lines_;
  if (log) *log << (s == Stream::kStderr ? "E " : "O ") << line << '\n';
  if (s == Stream::kStderr) {
    stderr_tail_.emplace_back(SanitizeUtf8(line, 512));  // a whole character, never half
    if (stderr_tail_.size() > kTailLines) stderr_tail_.pop_front();
  }
  found_.clear();
  extractor_->ProcessLine(line, &found_);  // always: steps without a number count every line
  if (lines_ <= skip_through_) return;     // sent before a restart
  for (const auto& x : found_) {
    if (batch_.samples_size() == 0) batch_started_ = SteadyClock::now();
    auto* ps = batch_.add_samples();
    ps->set_metric(x.metric);
    ps->set_step(x.step);
    ps->set_value(x.value);
    ps->set_line_no(lines_);
  }
  if (batch_.samples_size() >= batch_max_samples_) Flush();
}

void RunOutput::Tick() {
  if (batch_.samples_size() > 0 &&
      SteadyClock::now() - batch_started_ >= std::chrono::milliseconds(batch_max_ms_))
    Flush();
}

void RunOutput::Flush() {
  if (batch_.samples_size() == 0) return;
  batch_.set_run_id(run_id_);
  batch_.set_attempt(attempt_);
  batch_.set_seq(++seq_);
  emit_(batch_, lines_);
  batch_.Clear();
}

std::string RunOutput::StderrTail() const {
  std::string out;
  for (const auto& l : stderr_tail_) out += l + "\n";
  if (out.size() > kTailBytes) out = out.substr(out.size() - kTailBytes);
  return out;
}

}  // namespace tunectl
