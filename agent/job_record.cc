#include "agent/job_record.h"

#include <charconv>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/text.h"
#include "sys/files.h"

namespace tunectl {
namespace {

namespace fs = std::filesystem;
constexpr const char* kAssignFile = "assign.pb";
constexpr const char* kProgressFile = "progress";
constexpr const char* kFinishedFile = "finished";
constexpr const char* kStartFile = "started";

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
// "<seq> <lines>[ <metric>=<step>…]\n<the batch>"; metric names hold no blank or '='.
Status JobRecord::SaveProgress(const v1::MetricBatch& batch, int64_t covered_lines,
                               const std::map<std::string, int64_t>& side_steps) const {
  std::string head = std::to_string(batch.seq()) + " " + std::to_string(covered_lines);
  for (const auto& [metric, step] : side_steps) head += " " + metric + "=" + std::to_string(step);
  return WriteFileAtomic(dir_ + "/" + kProgressFile, head + "\n" + batch.SerializeAsString());
}

// "<ms since the epoch> <Slurm's StartTime>".
void JobRecord::SaveStart(const std::string& slurm_start) const {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  (void)WriteFileAtomic(dir_ + "/" + kStartFile, std::to_string(ms) + " " + slurm_start + "\n");
}

JobRecord::Start JobRecord::LoadStart() const {
  Start out;
  auto text = ReadFile(dir_ + "/" + kStartFile);
  if (!text.ok()) return out;
  std::istringstream in(*text);
  int64_t ms = 0;
  std::string start;
  if (!(in >> ms >> start)) return out;
  out.slurm_start = start;
  out.seen_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
  return out;
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
  for (std::string kv; head >> kv;) {
    const size_t eq = kv.rfind('=');
    int64_t step = 0;
    if (eq == std::string::npos || eq == 0) continue;
    const char* end = kv.data() + kv.size();
    if (std::from_chars(kv.data() + eq + 1, end, step).ptr == end)
      p.side_steps[kv.substr(0, eq)] = step;
  }
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
                                 const auto& sides = output_ ? output_->side_steps()
                                                             : std::map<std::string, int64_t>{};
                                 if (Status st = record_.SaveProgress(b, covered, sides); !st.ok())
                                   record_error_ = st.message();
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
  if (output_) output_->ResumeAfter(progress.seq, progress.lines, progress.side_steps);
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

void JobReport::Finish(const std::string& reason, int exit_code, bool job_over) {
  if (output_) {
    output_->Finish();
    fin_.set_lines(output_->lines());
    for (const auto& [metric, note] : output_->Notes())
      (*fin_.mutable_metric_notes())[metric] = SanitizeUtf8(note, 1024);
    fin_.set_stderr_tail(output_->StderrTail());
  }
  fin_.set_reason(reason);
  fin_.set_exit_code(exit_code);
  fin_.set_seq(batches_ + 1);
  fin_.set_batches(batches_);
  sink_.OnFinished(fin_);
  if (job_over) record_.MarkFinished(reason);
}

void JobReport::Fail(const std::string& reason, bool job_over) {
  fin_.set_infra_failure(true);
  Finish(reason, 0, job_over);
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
    if (e.path().filename().string() !=
        std::to_string(a.run_id()) + "-" + std::to_string(a.attempt()))
      continue;
    auto it = newest.find(a.run_id());
    if (it == newest.end() || it->second.attempt() < a.attempt()) {
      if (it != newest.end())
        older.push_back((e.path().parent_path() /
                         (std::to_string(a.run_id()) + "-" + std::to_string(it->second.attempt())))
                            .string());
      newest[a.run_id()] = a;
    } else {
      older.push_back(dir);
    }
  }
  Adoption out;
  for (const auto& dir : older)
    if (std::string id = JobRecord(dir, id_file).Id(); !id.empty())
      out.superseded.push_back({dir, id});
  for (auto& [_, a] : newest) out.runs.push_back(std::move(a));
  return out;
}

}  // namespace tunectl
