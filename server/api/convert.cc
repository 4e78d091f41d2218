#include "server/api/convert.h"

namespace tunectl {

grpc::Status ToGrpc(const Status& s) {
  using C = Status::Code;
  switch (s.code()) {
    case C::kOk: return grpc::Status::OK;
    case C::kInvalidArgument: return {grpc::StatusCode::INVALID_ARGUMENT, s.message()};
    case C::kNotFound: return {grpc::StatusCode::NOT_FOUND, s.message()};
    case C::kAlreadyExists: return {grpc::StatusCode::ALREADY_EXISTS, s.message()};
    case C::kFailedPrecondition: return {grpc::StatusCode::FAILED_PRECONDITION, s.message()};
    case C::kUnavailable: return {grpc::StatusCode::UNAVAILABLE, s.message()};
    case C::kInternal: return {grpc::StatusCode::INTERNAL, s.message()};
  }
  return {grpc::StatusCode::UNKNOWN, s.message()};
}

void ToProto(const WorkloadRow& w, v1::Workload* out) {
  out->set_name(w.name);
  out->set_description(w.description);
  out->set_config_version(w.config_version);
  out->set_repeats(w.spec.run.repeats);
  out->set_spec_json(w.spec_json);
  out->set_created_at(w.created_at);
  out->set_spec_revision(w.spec_revision);
}

void ToProto(const BaselineRow& b, v1::Baseline* out) {
  out->set_id(b.id);
  out->set_workload(b.workload);
  out->set_config_version(b.config_version);
  out->set_state(b.state);
  out->set_repeats(b.repeats);
  out->set_runs_succeeded(b.runs_succeeded);
  out->set_runs_failed(b.runs_failed);
  out->set_runs_active(b.runs_active);
  out->set_created_at(b.created_at);
  out->set_finished_at(b.finished_at);
  for (const auto& [k, v] : b.params) (*out->mutable_params())[k] = v;
  for (const auto& s : b.summaries) {
    auto* m = out->add_summaries();
    m->set_metric(s.metric);
    if (const MetricSpec* spec = b.spec.FindMetric(s.metric)) {
      m->set_unit(spec->unit);
      m->set_better(BetterName(spec->better));
      m->set_role(RoleName(spec->role));
    }
    m->set_n(s.stats.n);
    m->set_median(s.stats.median);
    m->set_mean(s.stats.mean);
    m->set_stddev(s.stats.stddev);
    m->set_cv(s.stats.cv);
    m->set_min(s.stats.min);
    m->set_max(s.stats.max);
  }
}

void ToProto(const RunRow& r, v1::Run* out) {
  out->set_id(r.id);
  out->set_baseline_id(r.baseline_id);
  out->set_workload(r.workload);
  out->set_index(r.idx);
  out->set_attempt(r.attempt);
  out->set_state(r.state);
  out->set_agent(r.agent);
  for (const auto& [k, v] : r.params) (*out->mutable_params())[k] = v;
  out->set_exit_code(r.exit_code.value_or(0));
  out->set_signal(r.signal.value_or(0));
  out->set_reason(r.reason);
  out->set_wait_reason(r.wait_reason);
  out->set_stderr_tail(r.stderr_tail);
  out->set_samples(r.samples);
  out->set_created_at(r.created_at);
  out->set_started_at(r.started_at);
  out->set_finished_at(r.finished_at);
  for (const auto& m : r.metrics) {
    auto* pm = out->add_metrics();
    pm->set_metric(m.metric);
    pm->set_samples(m.samples);
    pm->set_steady(m.steady);
    pm->set_median(m.median.value_or(0));
    pm->set_min(m.min.value_or(0));
    pm->set_max(m.max.value_or(0));
  }
}

void ToProto(const AgentRow& a, v1::Agent* out) {
  out->set_id(a.id);
  out->set_name(a.name);
  for (const auto& [k, v] : a.labels) (*out->mutable_labels())[k] = v;
  out->set_slots(a.slots);
  out->set_running(a.running);
  out->set_connected(a.connected);
  out->set_last_seen(a.last_seen);
  out->set_version(a.version);
}

void ToProto(const LaunchPlan& p, v1::Assign* out) {
  out->set_run_id(p.run_id);
  out->set_attempt(p.attempt);
  out->set_workload(p.workload);
  for (const auto& a : p.argv) out->add_argv(a);
  for (const auto& [k, v] : p.env) (*out->mutable_env())[k] = v;
  for (const auto& [path, content] : p.files) {
    auto* f = out->add_files();
    f->set_path(path);
    f->set_content(content);
  }
  for (const auto& m : p.metrics) {
    auto* r = out->add_metrics();
    r->set_name(m.name);
    r->set_pattern(m.pattern);
    r->set_json_key(m.json_key);
  }
  out->set_timeout_ms(p.timeout_ms);
}

}  // namespace tunectl
