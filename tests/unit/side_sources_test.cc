#include "agent/side_sources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "agent/run_output.h"
#include "core/spec.h"
#include "tests/unit/test_support.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;
using tunectl::testing::SpecError;
using tunectl::testing::With;
using Clock = SideSources::SteadyClock;
using std::chrono::milliseconds;

// Answers GETs from a script (a body or an error each) and records the URLs asked for.
class FakeGetter : public HttpGetter {
 public:
  Result<std::string> Get(const std::string& url, int timeout_ms) override {
    urls.push_back(url);
    timeouts.push_back(timeout_ms);
    if (answers.empty()) return Status::Unavailable("GET " + url + ": no answer scripted");
    auto a = answers.front();
    answers.pop_front();
    return a;
  }
  std::deque<Result<std::string>> answers;
  std::vector<std::string> urls;
  std::vector<int> timeouts;
};

MetricRule Scrape(const std::string& name, const std::string& url, const std::string& match,
                  int64_t every_ms, const std::string& agg = "mean") {
  MetricRule r;
  r.name = name;
  r.prometheus = url;
  r.match = match;
  r.every_ms = every_ms;
  r.agg = agg;
  return r;
}

TEST(SideSources, ScrapesOnTheirIntervalFromTheExporterTheAgentNamesOnTheRunsNode) {
  FakeGetter http;
  const std::string dcgm = testing::Fixture("prometheus", "dcgm_exporter_scrape1.txt");
  http.answers = {dcgm, dcgm};
  SideSourceOptions o;
  o.node = "gpu07";
  o.exporters = {{"dcgm", "http://{node}:9400/metrics"}};
  auto s = SideSources::Create(
      {Scrape("gpu_util", "dcgm", "DCGM_FI_DEV_GPU_UTIL{gpu=~\"0|1\"}", 1000)}, o, &http);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<ExtractedSample> out;
  const auto t0 = Clock::now();
  (*s)->Poll(t0, false, &out);
  (*s)->Poll(t0 + milliseconds(500), false, &out);  // not due yet
  (*s)->Poll(t0 + milliseconds(1000), false, &out);
  ASSERT_EQ(http.urls.size(), 2u);
  EXPECT_EQ(http.urls[0], "http://gpu07:9400/metrics");
  EXPECT_EQ(http.timeouts[0], 1000);  // never longer than the interval
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].metric, "gpu_util");
  EXPECT_EQ(out[0].step, 1);
  EXPECT_EQ(out[1].step, 2);
  EXPECT_DOUBLE_EQ(out[0].value, (97.0 + 94.0) / 2);  // GPUs 0 and 1 of the recorded scrape
  EXPECT_TRUE((*s)->Notes().empty());
}

TEST(SideSources, ACounterIsARatePerSecondAndItsFirstScrapeIsNoProblem) {
  FakeGetter http;
  http.answers = {std::string("# TYPE x_total counter\nx_total{a=\"1\"} 10\n"),
                  std::string("# TYPE x_total counter\nx_total{a=\"1\"} 40\n")};
  auto s = SideSources::Create({Scrape("x", "http://h/metrics", "x_total", 2000)}, {}, &http);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<ExtractedSample> out;
  const auto t0 = Clock::now();
  (*s)->Poll(t0, false, &out);
  (*s)->Poll(t0 + milliseconds(2000), false, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].step, 2);
  EXPECT_DOUBLE_EQ(out[0].value, 15.0);  // 30 in 2 s
  EXPECT_TRUE((*s)->Notes().empty());
}

TEST(SideSources, FailedScrapesAreNotedWithTheLastError) {
  FakeGetter http;
  auto s =
      SideSources::Create({Scrape("power", "http://127.0.0.1:9/metrics", "p", 100)}, {}, &http);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<ExtractedSample> out;
  const auto t0 = Clock::now();
  for (int i = 0; i < 3; ++i) (*s)->Poll(t0 + milliseconds(100 * i), false, &out);
  (*s)->Poll(t0 + milliseconds(1000), true, &out);  // the end scrapes nothing more
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(http.urls.size(), 3u);
  auto notes = (*s)->Notes();
  ASSERT_EQ(notes.count("power"), 1u);
  EXPECT_THAT(notes["power"], HasSubstr("3 of 3 scrapes failed"));
  EXPECT_THAT(notes["power"], HasSubstr("no answer scripted"));
}

TEST(SideSources, ASelectorMatchingNothingIsNotedWhenNoScrapeGaveAValue) {
  FakeGetter http;
  http.answers = {std::string("up 1\n")};
  auto s = SideSources::Create({Scrape("g", "http://h/metrics", "gpu_util", 1000)}, {}, &http);
  ASSERT_TRUE(s.ok());
  std::vector<ExtractedSample> out;
  (*s)->Poll(Clock::now(), false, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_THAT((*s)->Notes()["g"], HasSubstr("1 of 1 scrapes of http://h/metrics gave no value"));
}

TEST(SideSources, ARuleThatDoesNotParseIsRefusedNamingTheMetric) {
  FakeGetter http;
  auto bad = SideSources::Create({Scrape("g", "http://h/metrics", "gpu{a=", 1000)}, {}, &http);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("metrics.g.match"));
  auto https = SideSources::Create({Scrape("g", "https://h/metrics", "up", 1000)}, {}, &http);
  ASSERT_FALSE(https.ok());
  EXPECT_THAT(https.status().message(), HasSubstr("metrics.g.prometheus"));
}

TEST(SideSources, EventFilesUnderTheRunDirectoryAreReadAsTheyGrow) {
  const std::string dir = testing::TempDir("side-sources");
  std::filesystem::create_directories(dir + "/tb/train");
  const std::string bytes = testing::Fixture("tfevents", "pytorch_simple_value.tfevents");
  const std::string expected = testing::Fixture("tfevents", "pytorch_simple_value.expected");
  // tag \t step \t value \t wall_time per scalar the file holds
  std::vector<std::pair<int64_t, double>> want;
  std::istringstream in(expected);
  for (std::string tag, step, value, wall; in >> tag >> step >> value >> wall;)
    if (tag == "train/loss") want.push_back({std::stoll(step), std::stod(value)});
  ASSERT_GE(want.size(), 3u);
  const std::string path = dir + "/tb/train/events.out.tfevents.1700000000.node.42.0";
  MetricRule r;
  r.name = "loss";
  r.tensorboard = "train/loss";
  SideSourceOptions o;
  o.run_dir = dir;
  auto s = SideSources::Create({r}, o, nullptr);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<ExtractedSample> out;
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const auto t0 = Clock::now();
  (*s)->Poll(t0, false, &out);
  const size_t first = out.size();
  EXPECT_LT(first, want.size());  // a record cut in the middle waits for its end
  std::ofstream(path, std::ios::binary | std::ios::app) << bytes.substr(bytes.size() / 2);
  (*s)->Poll(t0 + milliseconds(10), false, &out);  // not listed again before the interval …
  EXPECT_EQ(out.size(), first);
  (*s)->Poll(t0 + milliseconds(20), true, &out);  // … but read to the end when the run ends
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(out[i].metric, "loss");
    EXPECT_EQ(out[i].step, want[i].first);
    if (std::isnan(want[i].second))
      EXPECT_TRUE(std::isnan(out[i].value)) << i;  // a loss of nan is passed on as logged
    else
      EXPECT_FLOAT_EQ(out[i].value, want[i].second) << i;
  }
  EXPECT_TRUE((*s)->Notes().empty());
}

TEST(SideSources, ACorruptEventFileIsNotedAndReadUpToTheDamage) {
  const std::string dir = testing::TempDir("side-sources");
  std::string bytes = testing::Fixture("tfevents", "pytorch_simple_value.tfevents");
  bytes[bytes.size() - 6] ^= 0x5a;  // inside the last record's data
  std::ofstream(dir + "/events.out.tfevents.1.h.1.0", std::ios::binary) << bytes;
  MetricRule r;
  r.name = "loss";
  r.tensorboard = "train/loss";
  SideSourceOptions o;
  o.run_dir = dir;
  auto s = SideSources::Create({r}, o, nullptr);
  ASSERT_TRUE(s.ok());
  std::vector<ExtractedSample> out;
  (*s)->Poll(Clock::now(), true, &out);
  EXPECT_FALSE(out.empty());
  EXPECT_THAT((*s)->Notes()["loss"], HasSubstr("CRC"));
}

const char* kScrapeSpec = R"yaml(
name: s
command: [python3, train.py]
metrics:
  sps: {pattern: 'sps (?P<value>\d+)', better: higher, role: primary}
  gpu_util: {prometheus: dcgm, match: 'DCGM_FI_DEV_GPU_UTIL{gpu=~"0|1"}', better: higher}
  cpu: {prometheus: "http://{node}:9100/metrics", match: node_cpu_seconds_total, every: 500ms, agg: sum, better: lower}
  loss: {tensorboard: train/loss, better: lower}
)yaml";

TEST(WorkloadSpecSources, ScrapeDefaultsAndTensorboardTagsRoundTripCanonicalJson) {
  auto s = ParseWorkloadSpec(kScrapeSpec);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const MetricSpec* g = s->FindMetric("gpu_util");
  EXPECT_EQ(g->prometheus, "dcgm");
  EXPECT_EQ(g->every_ms, 5000);
  EXPECT_EQ(g->agg, "mean");
  EXPECT_EQ(s->FindMetric("cpu")->every_ms, 500);
  EXPECT_EQ(s->FindMetric("cpu")->agg, "sum");
  EXPECT_EQ(s->FindMetric("loss")->tensorboard, "train/loss");
  auto again = ParseWorkloadSpec(WorkloadSpecToJson(*s));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(WorkloadSpecToJson(*again), WorkloadSpecToJson(*s));
}

TEST(WorkloadSpecSources, BadScrapesAreRefusedNamingTheField) {
  EXPECT_THAT(SpecError(With(kScrapeSpec, "gpu=~\"0|1\"}", "gpu=~\"0|1\"")),
              HasSubstr("metrics.gpu_util.match"));
  EXPECT_THAT(SpecError(With(kScrapeSpec, "every: 500ms", "every: 10ms")),
              HasSubstr("metrics.cpu.every"));
  EXPECT_THAT(SpecError(With(kScrapeSpec, "agg: sum", "agg: p99")), HasSubstr("metrics.cpu.agg"));
  EXPECT_THAT(SpecError(With(kScrapeSpec, "http://{node}:9100", "https://{node}:9100")),
              HasSubstr("metrics.cpu.prometheus"));
  EXPECT_THAT(SpecError(With(kScrapeSpec, "prometheus: dcgm, match", "match")),
              HasSubstr("metrics.gpu_util.match: belongs to a scrape"));
  EXPECT_THAT(SpecError(With(kScrapeSpec, ", match: node_cpu_seconds_total", "")),
              HasSubstr("metrics.cpu.match: missing"));
  EXPECT_THAT(SpecError(With(kScrapeSpec, "{tensorboard: train/loss,",
                             "{tensorboard: train/loss, pattern: 'x(\\d)',")),
              HasSubstr("set one source"));
}

TEST(SideSources, ATorchTraceInTheRunDirectoryGivesItsStepsSharesWhenTheRunEnds) {
  const std::string dir = testing::TempDir("side-sources");
  std::filesystem::create_directories(dir + "/prof");
  const std::string trace = testing::Fixture("profile", "torch_cpu_trace.json");
  std::ofstream(dir + "/prof/node.123.pt.trace.json", std::ios::binary) << trace;
  auto want = SummarizeKinetoTrace(trace);
  ASSERT_TRUE(want.ok()) << want.status().message();
  SideSourceOptions o;
  o.run_dir = dir;
  o.profile = "torch";
  auto s = SideSources::Create({}, o, nullptr);
  ASSERT_TRUE(s.ok());
  ASSERT_FALSE((*s)->empty());
  std::vector<ExtractedSample> out;
  (*s)->Poll(Clock::now(), false, &out);
  EXPECT_TRUE(out.empty());  // only once the run has ended
  (*s)->Poll(Clock::now(), true, &out);
  std::map<std::string, std::vector<int64_t>> steps;
  for (const auto& x : out) steps[x.metric].push_back(x.step);
  // The real CPU trace: ProfilerStep#1..#3, a data loader, no GPU.
  EXPECT_EQ(steps["profile_step_ms"], (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(steps["profile_dataloader_pct"], (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(steps.count("profile_kernel_pct"), 0u);  // unknown on a CPU-only trace, not 0 %
  for (const auto& x : out)
    if (x.metric == "profile_dataloader_pct" && x.step == 2) {
      EXPECT_DOUBLE_EQ(x.value, *want->steps[1].dataloader_pct);
      EXPECT_GT(x.value, 0);
      EXPECT_LT(x.value, 100);
    }
  EXPECT_THAT((*s)->Notes()["profile_step_ms"], HasSubstr("node.123.pt.trace.json"));
}

TEST(SideSources, AMissingTraceIsNotedNotSilent) {
  SideSourceOptions o;
  o.run_dir = testing::TempDir("side-sources");
  o.profile = "nsys";
  auto s = SideSources::Create({}, o, nullptr);
  ASSERT_TRUE(s.ok());
  std::vector<ExtractedSample> out;
  (*s)->Poll(Clock::now(), true, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_THAT((*s)->Notes()["profile_step_ms"], HasSubstr("no `nsys stats --format csv` report"));
}

TEST(ProfileSamples, NsysTotalsAreOneStepWithGpuTimes) {
  auto sum = SummarizeNsysStats(testing::Fixture("profile", "nsys_cuda_gpu_kern_sum.csv"),
                                testing::Fixture("profile", "nsys_cuda_gpu_mem_time_sum.csv"));
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  std::map<std::string, double> got;
  for (const auto& x : ProfileSamples(*sum)) {
    EXPECT_EQ(x.step, 1);
    got[x.metric] = x.value;
  }
  ASSERT_TRUE(sum->gpu_time.has_value());
  EXPECT_DOUBLE_EQ(got["profile_kernel_ms"], sum->gpu_time->kernel_ms);
  EXPECT_DOUBLE_EQ(got["profile_comm_ms"], sum->gpu_time->comm_ms);
  EXPECT_GT(got["profile_comm_ms"], 0);
  EXPECT_EQ(got.count("profile_idle_pct"), 0u);  // no wall time given: no shares
}

TEST(WorkloadSpecSources, AnExpressionDoesNotMixScrapedAndSteppedMetrics) {
  const std::string mixed = std::string(kScrapeSpec) +
                            "  per_util: {expr: 'sps / gpu_util', better: higher}\n"
                            "  twice: {expr: '2 * per_util', better: higher}\n";
  EXPECT_THAT(SpecError(mixed), HasSubstr("reads gpu_util (scraped: its step is the scrape's "
                                          "count) and sps (its step is the job's)"));
  const std::string scraped_only =
      std::string(kScrapeSpec) + "  util_per_cpu: {expr: 'gpu_util / cpu', better: higher}\n";
  auto s = ParseWorkloadSpec(scraped_only);
  EXPECT_TRUE(s.ok()) << s.status().message();
}

TEST(WorkloadSpecSources, ProfileIsTorchOrNsys) {
  auto s = ParseWorkloadSpec(std::string(kScrapeSpec) + "profile: torch\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->profile, "torch");
  auto again = ParseWorkloadSpec(WorkloadSpecToJson(*s));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->profile, "torch");
  EXPECT_THAT(SpecError(std::string(kScrapeSpec) + "profile: perf\n"),
              HasSubstr("profile: \"perf\" is not allowed; allowed: torch, nsys"));
}

// A run's output read again after an agent restart: what the side sources sent before is not sent
// twice (event files are re-read from their start), and scrapes count their steps on.
TEST(RunOutputResume, SideSamplesSentBeforeARestartAreNotSentAgain) {
  const std::string dir = testing::TempDir("side-resume");
  std::filesystem::copy_file(
      testing::kSourceDir + "/tests/fixtures/tfevents/pytorch_simple_value.tfevents",
      dir + "/events.out.tfevents.1.host");
  v1::Assign a;
  a.set_run_id(7);
  a.set_attempt(1);
  auto* loss = a.add_metrics();
  loss->set_name("loss");
  loss->set_tensorboard("train/loss");
  auto* util = a.add_metrics();
  util->set_name("util");
  util->set_prometheus("http://h/metrics");
  util->set_match("u");
  util->set_every_ms(100);
  util->set_agg("mean");
  FakeGetter http;
  std::vector<v1::MetricBatch> sent;
  auto emit = [&](const v1::MetricBatch& b, int64_t) { sent.push_back(b); };
  SideSourceOptions o;
  o.run_dir = dir;
  o.tfevents_poll_ms = 0;

  auto first = RunOutput::Create(a, 1000, 1000, emit);
  ASSERT_TRUE(first.ok()) << first.status().message();
  http.answers = {std::string("u 1\n"), std::string("u 2\n")};
  ASSERT_TRUE((*first)->ReadSideSources(a, o, &http).ok());
  (*first)->Tick();
  std::this_thread::sleep_for(milliseconds(120));
  (*first)->Tick();
  (*first)->Flush();
  const auto before = (*first)->side_steps();
  ASSERT_EQ(before.count("loss"), 1u);
  EXPECT_EQ(before.at("util"), 2);
  int loss_before = 0;
  for (const auto& b : sent)
    for (const auto& s : b.samples()) loss_before += s.metric() == "loss";
  EXPECT_GT(loss_before, 0);

  sent.clear();
  auto again = RunOutput::Create(a, 1000, 1000, emit);
  ASSERT_TRUE(again.ok());
  (*again)->ResumeAfter((*first)->seq(), 0, before);
  http.answers = {std::string("u 3\n")};
  ASSERT_TRUE((*again)->ReadSideSources(a, o, &http).ok());
  (*again)->Tick();
  (*again)->Finish();
  std::vector<int64_t> util_steps;
  for (const auto& b : sent) {
    EXPECT_GT(b.seq(), (*first)->seq());
    for (const auto& s : b.samples()) {
      EXPECT_NE(s.metric(), "loss") << "step " << s.step() << " was sent before the restart";
      if (s.metric() == "util") util_steps.push_back(s.step());
    }
  }
  EXPECT_EQ(util_steps, (std::vector<int64_t>{3}));
  EXPECT_EQ((*again)->side_steps().at("util"), 3);
  EXPECT_EQ((*again)->side_steps().at("loss"), before.at("loss"));
}

}  // namespace
}  // namespace tunectl
