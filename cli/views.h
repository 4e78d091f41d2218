// What each read command shows: tunectl.v1 messages -> tables, JSON documents and detail text.
// Pure functions; JSON keys are snake_case and stable.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/render.h"
#include "core/status.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

using ojson = nlohmann::ordered_json;

// The shape of every JSON document (docs/output.md): "apiVersion" and "kind" first, then the
// body's fields. A list is {"apiVersion", "kind": "<Kind>List", "items": [...],
// "next_page_token": "..." or null on the last page (and always null for lists that do not page)};
// its items are the item kind's fields without apiVersion and kind.
inline constexpr const char* kApiVersion = "tunectl/v1";
// The null rules: a value that does not exist is null, never 0 or "".
inline ojson OrNull(bool present, ojson v) {
  return present ? std::move(v) : ojson(nullptr);
}
inline ojson IdOrNull(int64_t id) {
  return OrNull(id != 0, id);
}  // 0 = none
inline ojson TextOrNull(const std::string& s) {
  return OrNull(!s.empty(), s);
}  // "" = none
ojson Document(const std::string& kind, const ojson& body);
ojson ListDocument(const std::string& item_kind, ojson items, const std::string& next_page_token);

// The kind of the document a message is shown as (DocKind<v1::Experiment>::kName ==
// "Experiment"); not defined for messages that are never a document of their own.
template <typename M>
struct DocKind;
#define TUNECTL_DOC_KIND(Msg, Name)            \
  template <>                                  \
  struct DocKind<Msg> {                        \
    static constexpr const char* kName = Name; \
  }
TUNECTL_DOC_KIND(v1::Workload, "Workload");
TUNECTL_DOC_KIND(v1::Baseline, "Baseline");
TUNECTL_DOC_KIND(v1::Run, "Run");
TUNECTL_DOC_KIND(v1::RunSamples, "RunSamples");
TUNECTL_DOC_KIND(v1::Agent, "Agent");
TUNECTL_DOC_KIND(v1::Hypothesis, "Hypothesis");
TUNECTL_DOC_KIND(v1::Experiment, "Experiment");
TUNECTL_DOC_KIND(v1::Config, "Config");
TUNECTL_DOC_KIND(v1::LogEntry, "LogEntry");
TUNECTL_DOC_KIND(v1::Schedule, "Schedule");
TUNECTL_DOC_KIND(v1::Batch, "Batch");
TUNECTL_DOC_KIND(v1::Token, "Token");
TUNECTL_DOC_KIND(v1::WhoAmIResponse, "WhoAmI");
TUNECTL_DOC_KIND(v1::AdvisorReport, "AdvisorReport");
TUNECTL_DOC_KIND(v1::AuditReport, "AuditReport");
TUNECTL_DOC_KIND(v1::AuditEntry, "AuditEntry");
TUNECTL_DOC_KIND(v1::Goal, "Goal");
TUNECTL_DOC_KIND(v1::Regression, "RegressionReport");
TUNECTL_DOC_KIND(v1::RecordedRegression, "Regression");
TUNECTL_DOC_KIND(v1::StabilityRun, "StabilityRun");
TUNECTL_DOC_KIND(v1::Watch, "Watch");
#undef TUNECTL_DOC_KIND

// -o name: "kind/id" (experiment/12, workload/demo), as kubectl prints it. Only for messages
// that name one object; the rest have no overload.
std::string NameOf(const v1::Workload& w);
std::string NameOf(const v1::Baseline& b);
std::string NameOf(const v1::Run& r);
std::string NameOf(const v1::Agent& a);
std::string NameOf(const v1::Hypothesis& h);
std::string NameOf(const v1::Experiment& e);
std::string NameOf(const v1::Config& c);  // config/<workload>
std::string NameOf(const v1::Schedule& s);
std::string NameOf(const v1::Batch& b);
std::string NameOf(const v1::Token& t);
std::string NameOf(const v1::Goal& g);  // goal/<workload>
std::string NameOf(const v1::RecordedRegression& g);
std::string NameOf(const v1::StabilityRun& s);  // run/<id>
std::string NameOf(const v1::Watch& w);

// Parameter values in JSON are typed by the workload's declared types: int and float as
// numbers, bool as true/false, enum and string as strings. A parameter whose type is not known
// (no spec at hand, or not declared) is typed by its literal: an integer or decimal number, true
// or false; anything else stays a string.
using ParamTypes = std::map<std::string, std::string>;  // name -> int|float|bool|enum|string
ParamTypes ParamTypesOf(const std::string& spec_json);  // {} when it is not a spec
ojson ParamValueJson(const std::string& value, const std::string& type);
ojson ParamsJson(const google::protobuf::Map<std::string, std::string>& params,
                 const ParamTypes& types);

// CSV with raw values: numbers as CsvNumber (no units, no %, ratios as ratios), an empty cell
// for a missing value, one header line.
Table BaselineCsv(const v1::Baseline& b);      // one row per metric
Table RunCsv(const v1::Run& r);                // one row per metric of the run
Table VerdictCsv(const v1::Experiment& e);     // one row per metric of the verdict
Table BatchCsv(const v1::Batch& b);            // one row per member experiment
Table ConfigCsv(const v1::Config& c);          // param,value rows of the current config
Table HypothesisCsv(const v1::Hypothesis& h);  // one row
Table ExperimentsCsv(const v1::ListExperimentsResponse& r);  // one row per experiment
Table BaselinesCsv(const v1::ListBaselinesResponse& r);      // one row per baseline
Table LogCsv(const v1::ListLogResponse& r);                  // one row per tuning-log entry
// Any other document as CSV: one row of its scalar fields, nested objects as "a.b" columns,
// arrays as their JSON text; null is an empty cell.
Table DocumentCsv(const ojson& doc);
// The stderr line under a table or CSV whose list has more pages.
std::string NextPageHint(const std::string& next_page_token);

ojson TokenJson(const v1::Token& t);  // the secret only when the response carries one
Table TokensTable(const v1::ListTokensResponse& r);
ojson WhoAmIJson(const v1::WhoAmIResponse& w);

ojson WorkloadJson(const v1::Workload& w);
Table WorkloadsTable(const v1::ListWorkloadsResponse& r);

ojson BaselineJson(const v1::Baseline& b, const ParamTypes& types = {});
Table BaselinesTable(const v1::ListBaselinesResponse& r);
Table BaselineSummaryTable(const v1::Baseline& b);  // one row per metric
std::string BaselineDetail(const v1::Baseline& b);  // header lines + summary table
// One progress line for `baseline create --wait`.
std::string BaselineProgress(const v1::Baseline& b, const v1::ListRunsResponse& runs,
                             double elapsed_s);

// `baseline advise`: ranked bottleneck hypotheses, each with evidence, changes and the command.
ojson AdvisorJson(const v1::AdvisorReport& r);
std::string AdvisorDetail(const v1::AdvisorReport& r);

// `audit verify` / `audit head`: the chain's head and the first break, if any.
ojson AuditJson(const v1::AuditReport& r);
std::string AuditDetail(const v1::AuditReport& r);
// What `audit head` prints to keep elsewhere: {"seq", "hash", "sealed_at"}.
ojson AuditHeadJson(const v1::AuditReport& r);

// `audit export`: one row per audit event or log entry, in the chain's order. The table is compact
// (seq, source, id, time, actor, kind, subject, the hash's first 12 digits); the CSV has every
// column the hash covers, as hashed, with the link's hash and its predecessor's; the JSON object
// has the CSV's columns as keys (seq, hash and prev_hash null when not sealed).
Table AuditExportTable(const v1::ExportAuditResponse& r);
Table AuditExportCsv(const v1::ExportAuditResponse& r);
ojson AuditEntryJson(const v1::AuditEntry& e);

// `goal show`: the target, where the current config stands (with its CI), each frozen change.
ojson GoalJson(const v1::Goal& g);
std::string GoalDetail(const v1::Goal& g);

ojson RunJson(const v1::Run& r, const ParamTypes& types = {});
// One line of a run's output for `run logs -o json` (kind RunLogLine, one document per line);
// bytes that are not UTF-8 become U+FFFD.
ojson RunLogLineJson(int64_t run, int attempt, const std::string& agent, const std::string& line);
Table RunsTable(const v1::ListRunsResponse& r);
std::string RunDetail(const v1::Run& r);

// `run samples`: per metric the points (step, value; decimated when `points_total` is larger),
// the warm-up's end, the steady window with its median, the samples left out (NaN/Inf, skipped
// steps) and the outliers the median counts. The text: a summary line per metric and its points
// as rows; the CSV: one row per point and per non-finite sample, with its phase.
ojson RunSamplesJson(const v1::RunSamples& r);
std::string RunSamplesDetail(const v1::RunSamples& r);
Table RunSamplesCsv(const v1::RunSamples& r);

ojson AgentJson(const v1::Agent& a);
Table AgentsTable(const v1::ListAgentsResponse& r);

std::string FormatParams(const google::protobuf::Map<std::string, std::string>& p);

// The loop: hypotheses, experiments and their verdicts, configs, the tuning log.
ojson HypothesisJson(const v1::Hypothesis& h, const ParamTypes& types = {});
Table HypothesesTable(const v1::ListHypothesesResponse& r);
std::string HypothesisDetail(const v1::Hypothesis& h);

ojson ExperimentJson(const v1::Experiment& e, const ParamTypes& types = {});
Table ExperimentsTable(const v1::ListExperimentsResponse& r);
Table VerdictTable(
    const v1::Experiment& e);  // metric, role, control, variant, effect, CI, p, decision
std::string ExperimentDetail(const v1::Experiment& e);
std::string ExperimentProgress(const v1::Experiment& e, double elapsed_s);

ojson ConfigJson(const v1::Config& c);  // params typed by c.spec_json
std::string ConfigDetail(const v1::Config& c);
// The current config as json | yaml | env | args (the bound command line).
Result<std::string> ConfigExport(const v1::Config& c, const std::string& format);

ojson LogJson(const v1::LogEntry& e);
Table LogTable(const v1::ListLogResponse& r);
// `log --param X`: what was tried for X and what happened, one short row per decided experiment.
Table LogParamTable(const v1::ListLogResponse& r);

ojson ScheduleJson(const v1::Schedule& s);
Table SchedulesTable(const v1::ListSchedulesResponse& r);
ojson BatchJson(const v1::Batch& b, const ParamTypes& types = {});
// A batch in a list: its members counted by state and decision (batch show has each member).
ojson BatchSummaryJson(const v1::Batch& b);
Table BatchesTable(const v1::ListBatchesResponse& r);
std::string BatchDetail(const v1::Batch& b);

ojson RegressionJson(const v1::Regression& r);
std::string RegressionDetail(const v1::Regression& r);
// The series one row per run (for -o csv: plot it): run, finished, value, the level of its
// segment between change points, and "regression"/"improvement" on the first run of a change.
Table RegressionSeriesTable(const v1::Regression& r);
ojson StabilityJson(const v1::StabilityRun& s);
ojson RecordedRegressionJson(const v1::RecordedRegression& g);
std::string StabilityDetail(const v1::StabilityRun& s);
// `run`: the stability run as GetRun gives it (nullptr = not known yet); its `metric` (the
// regression series' metric) is shown as the samples so far give it.
std::string StabilityProgress(const v1::StabilityRun& s, const v1::Run* run,
                              const std::string& metric, double elapsed_s);
ojson WatchJson(const v1::Watch& w);
std::string WatchLine(const v1::Watch& w);

std::string FormatP(double p);
std::string FormatCi(double lo, double hi);  // "[+1.2%, +3.4%]"

// `workload show` (issue 16): the spec summarised (params with type, default, range and current
// value; metrics with role and source; the run policy), the current config, what it has recorded.
ojson WorkloadDetailJson(const v1::WorkloadDetail& d);
std::string WorkloadDetailText(const v1::WorkloadDetail& d);
Table WorkloadDetailCsv(const v1::WorkloadDetail& d);  // one row per param and metric
// `workload list`: WorkloadJson with archived / archived_at; with --all, the table's ARCHIVED
// column (when, or "-").
ojson WorkloadListJson(const v1::Workload& w);
Table WorkloadsTableWithArchived(const v1::ListWorkloadsResponse& r);

}  // namespace tunectl
