#include "agent/job_record.h"

#include <filesystem>
#include <map>
#include <sstream>

#include "sys/files.h"

namespace tunectl {
namespace {

namespace fs = std::filesystem;
constexpr const char* kAssignFile = "assign.pb";
constexpr const char* kProgressFile = "progress";
constexpr const char* kFinishedFile = "finished";

bool Exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
  return s.substr(i);
}

}  // namespace

bool JobRecord::Submitted() const {
  return Exists(dir_ + "/" + id_file_);
}
bool JobRecord::Finished() const {
  return Exists(dir_ + "/" + kFinishedFile);
}

Status JobRecord::SaveAssign(const v1::Assign& a) const {
  return WriteFileAtomic(dir_ + "/" + kAssignFile, a.SerializeAsString());
}

Status JobRecord::SaveId(const std::string& id) const {
  return WriteFileAtomic(dir_ + "/" + id_file_, id + "\n");
}

std::string JobRecord::Id() const {
  auto text = ReadFile(dir_ + "/" + id_file_);
  return text.ok() ? Trim(*text) : "";
}

// "<seq> <lines>\n" and the serialized batch.
void JobRecord::SaveProgress(const v1::MetricBatch& batch, int64_t covered_lines) const {
  (void)WriteFileAtomic(dir_ + "/" + kProgressFile, std::to_string(batch.seq()) + " " +
                                                        std::to_string(covered_lines) + "\n" +
                                                        batch.SerializeAsString());
}

JobRecord::Progress JobRecord::LoadProgress() const {
  Progress p;
  auto text = ReadFile(dir_ + "/" + kProgressFile);
  if (!text.ok()) return p;
  const size_t nl = text->find('\n');
  if (nl == std::string::npos) return p;
  std::istringstream head(text->substr(0, nl));
  int64_t seq = 0, lines = 0;
  v1::MetricBatch last;
  if (!(head >> seq >> lines) || !last.ParseFromString(text->substr(nl + 1))) return p;
  p.seq = seq;
  p.lines = lines;
  p.last = std::move(last);
  return p;
}

void JobRecord::MarkFinished(const std::string& why) const {
  (void)WriteFileAtomic(dir_ + "/" + kFinishedFile, (why.empty() ? "ok" : why) + "\n");
}

JobReport::JobReport(const v1::Assign& a, const ExecutorOptions& opts, const JobRecord& record,
                     RunSink& sink)
    : record_(record), sink_(sink) {
  fin_.set_run_id(a.run_id());
  fin_.set_attempt(a.attempt());
  auto out = RunOutput::Create(a, opts.batch_max_samples, opts.batch_max_ms,
                               [this](const v1::MetricBatch& b, int64_t covered) {
                                 record_.SaveProgress(b, covered);
                                 batches_ = b.seq();
                                 sink_.OnBatch(b);
                               });
  if (out.ok())
    output_ = std::move(*out);
  else
    status_ = out.status();
}

void JobReport::Resume() {
  const JobRecord::Progress progress = record_.LoadProgress();
  if (progress.last) {
    batches_ = progress.seq;
    sink_.OnBatch(*progress.last);  // the server keeps one copy per sequence number
  }
  if (output_) output_->ResumeAfter(progress.seq, progress.lines);
}

void JobReport::Pending(const std::string& external_id, const std::string& reason) {
  if (external_id + "\n" + reason == last_pending_) return;
  last_pending_ = external_id + "\n" + reason;
  v1::RunPending p;
  p.set_run_id(fin_.run_id());
  p.set_attempt(fin_.attempt());
  p.set_external_id(external_id);
  p.set_reason(reason);
  sink_.OnPending(p);
}

void JobReport::Started(const std::string& node, const std::string& external_id,
                        const std::string& placement) {
  v1::RunStarted s;
  s.set_run_id(fin_.run_id());
  s.set_attempt(fin_.attempt());
  s.set_node(node);
  s.set_slot(-1);
  s.set_external_id(external_id);
  s.set_placement(placement);
  sink_.OnStarted(s);
}

void JobReport::Finish(const std::string& reason, int exit_code) {
  if (output_) {
    output_->Flush();
    fin_.set_lines(output_->lines());
    fin_.set_stderr_tail(output_->StderrTail());
  }
  fin_.set_reason(reason);
  fin_.set_exit_code(exit_code);
  fin_.set_seq(batches_ + 1);
  fin_.set_batches(batches_);
  sink_.OnFinished(fin_);
  record_.MarkFinished(reason);
}

void JobReport::Fail(const std::string& reason) {
  fin_.set_infra_failure(true);
  Finish(reason, 0);
}

Adoption FindAdoptable(const ExecutorOptions& opts, const std::string& id_file) {
  std::map<int64_t, v1::Assign> newest;
  std::vector<std::string> older;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(opts.runs_dir, ec)) {
    const std::string dir = e.path().string();
    JobRecord rec(dir, id_file);
    if (!rec.Submitted() || rec.Finished()) continue;
    auto bytes = ReadFile(dir + "/" + kAssignFile);
    v1::Assign a;
    if (!bytes.ok() || !a.ParseFromString(*bytes)) continue;
    if (dir != RunDirOf(opts, a.run_id(), a.attempt())) continue;
    auto it = newest.find(a.run_id());
    if (it == newest.end() || it->second.attempt() < a.attempt()) {
      if (it != newest.end()) older.push_back(RunDirOf(opts, a.run_id(), it->second.attempt()));
      newest[a.run_id()] = a;
    } else {
      older.push_back(dir);
    }
  }
  Adoption out;
  for (const auto& dir : older) {
    JobRecord rec(dir, id_file);
    if (std::string id = rec.Id(); !id.empty()) out.superseded_ids.push_back(id);
    rec.MarkFinished("superseded");
  }
  for (auto& [_, a] : newest) out.runs.push_back(std::move(a));
  return out;
}

}  // namespace tunectl
