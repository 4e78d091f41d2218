#include "agent/side_sources.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace tunectl {
namespace {

constexpr int kMaxDepth = 4;
constexpr size_t kMaxReadPerPoll = 4u << 20;

std::string ReplaceNode(std::string url, const std::string& node) {
  const std::string key = "{node}";
  for (size_t at = url.find(key); at != std::string::npos; at = url.find(key, at + node.size()))
    url.replace(at, key.size(), node);
  return url;
}

}  // namespace

Result<std::unique_ptr<SideSources>> SideSources::Create(const std::vector<MetricRule>& rules,
                                                         SideSourceOptions opts, HttpGetter* http) {
  std::unique_ptr<SideSources> s(new SideSources());
  s->opts_ = std::move(opts);
  s->http_ = http;
  for (const auto& r : rules) {
    if (!r.tensorboard.empty()) s->tags_[r.tensorboard].push_back(r.name);
    if (r.prometheus.empty()) continue;
    const std::string field = "metrics." + r.name;
    std::string url = r.prometheus;
    if (auto it = s->opts_.exporters.find(url); it != s->opts_.exporters.end()) url = it->second;
    url = ReplaceNode(url, s->opts_.node);
    if (auto u = ParsePromUrl(url); !u.ok())
      return Status::InvalidArgument(field + ".prometheus: " + u.status().message());
    auto m = PromMatcher::Parse(r.match);
    if (!m.ok()) return Status::InvalidArgument(field + ".match: " + m.status().message());
    auto agg = ParsePromAgg(r.agg.empty() ? "mean" : r.agg);
    if (!agg.ok()) return Status::InvalidArgument(field + ".agg: " + agg.status().message());
    if (r.every_ms <= 0)
      return Status::InvalidArgument(field + ".every: " + std::to_string(r.every_ms) +
                                     " ms; a scrape interval is positive");
    s->scrapes_.push_back(Scrape{r.name, url, r.every_ms, PromSampler(std::move(*m), *agg)});
  }
  if (!s->scrapes_.empty() && !http)
    return Status::InvalidArgument("prometheus metrics need an HTTP getter");
  return s;
}

void SideSources::Poll(SteadyClock::time_point now, bool final, std::vector<ExtractedSample>* out) {
  if (!final) {
    for (auto& sc : scrapes_) {
      if (now < sc.next) continue;
      // Due again one interval after it was due, not after it ended: the steps stay a clock.
      sc.next = sc.next == SteadyClock::time_point{}
                    ? now + std::chrono::milliseconds(sc.every_ms)
                    : std::max(sc.next + std::chrono::milliseconds(sc.every_ms), now);
      ++sc.step;
      ++sc.tried;
      const int timeout = static_cast<int>(std::min<int64_t>(opts_.scrape_timeout_ms, sc.every_ms));
      auto body = http_->Get(sc.url, std::max(timeout, 100));
      if (!body.ok()) {
        ++sc.failed;
        sc.last_error = body.status().message();
        continue;
      }
      auto parsed = ParsePromText(*body);
      if (!parsed.ok()) {
        ++sc.failed;
        sc.last_error = sc.url + ": " + parsed.status().message();
        continue;
      }
      const int64_t at_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
      auto got = sc.sampler.Add(*parsed, at_ms);
      if (!got.value) {
        ++sc.empty;
        sc.last_empty = got.why_none;
        continue;
      }
      ++sc.got;
      out->push_back({sc.metric, sc.step, *got.value});
    }
  }
  if (final && !opts_.profile.empty()) ReadProfile(out);
  if (tags_.empty()) return;
  if (!final && now < next_listing_) return;
  next_listing_ = now + std::chrono::milliseconds(opts_.tfevents_poll_ms);
  ReadEventFiles(out);
}

void SideSources::ReadEventFiles(std::vector<ExtractedSample>* out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(opts_.run_dir, fs::directory_options::skip_permission_denied,
                                      ec);
  std::vector<std::string> paths;
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() >= kMaxDepth) it.disable_recursion_pending();
    if (it->is_regular_file(ec) && IsTfEventsFileName(it->path().filename().string()))
      paths.push_back(it->path().string());
  }
  std::sort(paths.begin(), paths.end());  // one order every time: the files' samples in order
  std::vector<TfScalar> scalars;
  for (const auto& path : paths) {
    EventFile& f = files_[path];
    if (f.failed) continue;
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(f.offset));
    std::string buf(kMaxReadPerPoll, '\0');
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.resize(static_cast<size_t>(in.gcount()));
    if (buf.empty()) continue;
    f.offset += buf.size();
    scalars.clear();
    if (auto st = f.reader.Feed(buf, &scalars); !st.ok()) {
      f.failed = true;
      file_errors_[path] = st.message();
    }
    for (const auto& sc : scalars) {
      auto t = tags_.find(sc.tag);
      if (t == tags_.end()) continue;
      for (const auto& metric : t->second) out->push_back({metric, sc.step, sc.value});
    }
  }
}

std::vector<ExtractedSample> ProfileSamples(const TraceSummary& s) {
  std::vector<ExtractedSample> out;
  auto add = [&](const StepShares& x, int64_t step) {
    out.push_back({"profile_step_ms", step, x.wall_ms});
    const std::pair<const char*, const std::optional<double>*> shares[] = {
        {"profile_kernel_pct", &x.kernel_pct},
        {"profile_comm_pct", &x.comm_pct},
        {"profile_memcpy_pct", &x.memcpy_pct},
        {"profile_idle_pct", &x.idle_pct},
        {"profile_comm_overlap_pct", &x.comm_overlap_pct},
        {"profile_dataloader_pct", &x.dataloader_pct},
        {"profile_cpu_op_pct", &x.cpu_op_pct}};
    for (const auto& [name, v] : shares)
      if (v->has_value()) out.push_back({name, step, **v});
  };
  if (s.steps.empty()) {  // nsys: totals only
    if (s.total.wall_ms > 0) add(s.total, 1);
    if (s.gpu_time) {
      out.push_back({"profile_kernel_ms", 1, s.gpu_time->kernel_ms});
      out.push_back({"profile_comm_ms", 1, s.gpu_time->comm_ms});
      out.push_back({"profile_memcpy_ms", 1, s.gpu_time->memcpy_ms});
    }
    return out;
  }
  for (const auto& st : s.steps) add(st, s.pseudo_step || st.step < 0 ? 1 : st.step);
  return out;
}

void SideSources::ReadProfile(std::vector<ExtractedSample>* out) {
  namespace fs = std::filesystem;
  constexpr uintmax_t kMaxTraceBytes = uintmax_t{1} << 30;
  const bool torch = opts_.profile == "torch";
  std::vector<std::string> traces, kern, mem;
  std::error_code ec;
  fs::recursive_directory_iterator it(opts_.run_dir, fs::directory_options::skip_permission_denied,
                                      ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() >= kMaxDepth) it.disable_recursion_pending();
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    auto ends = [&](std::string_view suffix) {
      return name.size() >= suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    if (torch && ends(".json") && has("trace")) traces.push_back(it->path().string());
    if (!torch && ends(".csv") && (has("cuda_gpu_kern_sum") || has("gpukernsum")))
      kern.push_back(it->path().string());
    if (!torch && ends(".csv") && (has("cuda_gpu_mem_time_sum") || has("gpumemtimesum")))
      mem.push_back(it->path().string());
  }
  std::sort(traces.begin(), traces.end());
  std::sort(kern.begin(), kern.end());
  std::sort(mem.begin(), mem.end());
  auto read = [&](const std::string& path, std::string* text) -> bool {
    std::error_code size_ec;
    const uintmax_t size = fs::file_size(path, size_ec);
    if (size_ec || size > kMaxTraceBytes) {
      profile_note_ =
          path + ": " + (size_ec ? size_ec.message() : "larger than 1 GiB") + "; not summarised";
      return false;
    }
    std::ifstream in(path, std::ios::binary);
    text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return true;
  };
  Result<TraceSummary> summary = Status::NotFound("no trace");
  std::string from;
  if (torch) {
    if (traces.empty()) {
      profile_note_ = "profile: torch, but no *trace*.json under the run directory " +
                      opts_.run_dir + " (export_chrome_trace or tensorboard_trace_handler there)";
      return;
    }
    std::string text;
    if (!read(traces[0], &text)) return;
    summary = SummarizeKinetoTrace(text);
    from = traces[0];
    if (traces.size() > 1)
      from += " (the first of " + std::to_string(traces.size()) + " traces by name)";
  } else {
    if (kern.empty() && mem.empty()) {
      profile_note_ =
          "profile: nsys, but no `nsys stats --format csv` report (*cuda_gpu_kern_sum*.csv, "
          "*cuda_gpu_mem_time_sum*.csv) under the run directory " +
          opts_.run_dir;
      return;
    }
    std::string k, m;
    if (!kern.empty() && !read(kern[0], &k)) return;
    if (!mem.empty() && !read(mem[0], &m)) return;
    summary = SummarizeNsysStats(k, m);
    from = kern.empty() ? mem[0] : mem.empty() ? kern[0] : kern[0] + " and " + mem[0];
  }
  if (!summary.ok()) {
    profile_note_ = from + ": " + summary.status().message();
    return;
  }
  for (auto& x : ProfileSamples(*summary)) out->push_back(std::move(x));
  profile_note_ = "from " + from;
  for (const auto& w : summary->warnings) profile_note_ += "; " + w;
}

void SideSources::ContinueSteps(const std::map<std::string, int64_t>& sent) {
  for (auto& sc : scrapes_)
    if (auto it = sent.find(sc.metric); it != sent.end()) sc.step = std::max(sc.step, it->second);
}

std::map<std::string, std::string> SideSources::Notes() const {
  std::map<std::string, std::string> notes;
  if (!profile_note_.empty()) notes["profile_step_ms"] = profile_note_;
  for (const auto& sc : scrapes_) {
    std::string n;
    if (sc.failed > 0)
      n = std::to_string(sc.failed) + " of " + std::to_string(sc.tried) +
          " scrapes failed, the last: " + sc.last_error;
    if (sc.empty > 0 && sc.got == 0)  // a counter's first scrape has no rate: not a problem
      n += (n.empty() ? "" : "; ") + std::to_string(sc.empty) + " of " + std::to_string(sc.tried) +
           " scrapes of " + sc.url + " gave no value: " + sc.last_empty;
    if (sc.tried == 0) n = "never scraped (the run ended first)";
    if (!n.empty()) notes[sc.metric] = n;
  }
  if (!file_errors_.empty()) {
    std::string n;
    for (const auto& [path, err] : file_errors_)
      n += (n.empty() ? "" : "; ") + path + ": " + err + " (read up to there)";
    for (const auto& [tag, metrics] : tags_)
      for (const auto& m : metrics) notes[m] = n;
  }
  return notes;
}

}  // namespace tunectl
