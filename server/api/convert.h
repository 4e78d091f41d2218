// Conversions between store rows and tunectl.v1 messages, and the single mapping of a domain
// Status to grpc::Status. Pure functions.
#pragma once

#include <grpcpp/support/status.h>

#include "server/store/store.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

grpc::Status ToGrpc(const Status& s);

void ToProto(const TokenRow& t, v1::Token* out);  // never a secret: rows hold none
void ToProto(const WorkloadRow& w, v1::Workload* out);
// `workload show`: the spec summarised (core/lifecycle.h), the current config, the history.
void ToProto(const WorkloadDetailRow& d, v1::WorkloadDetail* out);
void ToProto(const BaselineRow& b, v1::Baseline* out);
void ToProto(const AdvisorReport& r, v1::AdvisorReport* out);
void ToProto(const GoalRow& g, v1::Goal* out);
void ToProto(const AuditCheck& a, v1::AuditReport* out);
void ToProto(const AuditExportRow& r, v1::AuditEntry* out);
void ToProto(const RunRow& r, v1::Run* out);
void ToProto(const RunSamplesRow& r, v1::RunSamples* out);
void ToProto(const AgentRow& a, v1::Agent* out);
void ToProto(const LaunchPlan& p, v1::Assign* out);
void ToProto(const Change& c, v1::Change* out);
void ToProto(const HypothesisRow& h, v1::Hypothesis* out);
void ToProto(const MetricVerdict& m, v1::MetricVerdict* out);
void ToProto(const ExperimentRow& e, v1::Experiment* out);
void ToProto(const ConfigRow& c, v1::Config* out);
void ToProto(const LogRow& l, v1::LogEntry* out);

void ToProto(const StabilityRow& s, v1::StabilityRun* out);
void ToProto(const RegressionRecord& g, v1::RecordedRegression* out);

}  // namespace tunectl
