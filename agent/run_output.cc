#include "agent/run_output.h"

#include <algorithm>
#include <ostream>

#include "core/text.h"

namespace tunectl {
namespace {
constexpr size_t kTailLines = 20;
constexpr size_t kTailBytes = 4096;
}  // namespace

namespace {
std::vector<MetricRule> RulesOf(const v1::Assign& a) {
  std::vector<MetricRule> rules;
  for (const auto& m : a.metrics())
    rules.push_back({m.name(), m.pattern(), m.json_key(), m.parser(), m.field(), m.expr(),
                     m.prometheus(), m.match(), m.every_ms(), m.agg(), m.tensorboard()});
  return rules;
}
}  // namespace

Result<std::unique_ptr<RunOutput>> RunOutput::Create(const v1::Assign& a, int batch_max_samples,
                                                     int batch_max_ms, Emit emit) {
  auto extractor = MetricExtractor::Create(RulesOf(a));
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

void RunOutput::ResumeAfter(int64_t sent_seq, int64_t sent_lines,
                            const std::map<std::string, int64_t>& side_steps) {
  seq_ = sent_seq;
  skip_through_ = sent_lines;
  side_resume_ = side_steps;
  side_sent_ = side_steps;
  if (sides_) sides_->ContinueSteps(side_resume_);
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
  AddFound(lines_);
}

void RunOutput::AddSideSamples(bool final) {
  if (!sides_) return;
  found_.clear();
  sides_->Poll(SteadyClock::now(), final, &found_);
  if (found_.empty()) return;
  extractor_->Derive(0, &found_);
  if (!side_resume_.empty())  // sent before a restart
    std::erase_if(found_, [&](const ExtractedSample& x) {
      auto it = side_resume_.find(x.metric);
      return it != side_resume_.end() && x.step <= it->second;
    });
  AddFound(0);  // not from a line
}

void RunOutput::AddFound(int64_t line_no) {
  for (const auto& x : found_) {
    if (batch_.samples_size() == 0) batch_started_ = SteadyClock::now();
    auto* ps = batch_.add_samples();
    ps->set_metric(x.metric);
    ps->set_step(x.step);
    ps->set_value(x.value);
    ps->set_line_no(line_no);
  }
  if (batch_.samples_size() >= batch_max_samples_) Flush();
}

Status RunOutput::ReadSideSources(const v1::Assign& a, SideSourceOptions opts, HttpGetter* http) {
  opts.profile = a.profile();
  auto sides = SideSources::Create(RulesOf(a), std::move(opts), http);
  if (!sides.ok()) return sides.status();
  if (!(*sides)->empty()) sides_ = std::move(*sides);
  if (sides_) sides_->ContinueSteps(side_resume_);
  return Status::Ok();
}

void RunOutput::Finish() {
  AddSideSamples(true);
  Flush();
}

std::map<std::string, std::string> RunOutput::Notes() const {
  return sides_ ? sides_->Notes() : std::map<std::string, std::string>{};
}

void RunOutput::Tick() {
  AddSideSamples(false);
  if (batch_.samples_size() > 0 &&
      SteadyClock::now() - batch_started_ >= std::chrono::milliseconds(batch_max_ms_))
    Flush();
}

void RunOutput::Flush() {
  if (batch_.samples_size() == 0) return;
  batch_.set_run_id(run_id_);
  batch_.set_attempt(attempt_);
  batch_.set_seq(++seq_);
  for (const auto& s : batch_.samples())
    if (s.line_no() == 0) side_sent_[s.metric()] = std::max(side_sent_[s.metric()], s.step());
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
