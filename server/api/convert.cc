#include "server/api/convert.h"

#include <nlohmann/json.hpp>

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
    case C::kUnauthenticated: return {grpc::StatusCode::UNAUTHENTICATED, s.message()};
    case C::kPermissionDenied: return {grpc::StatusCode::PERMISSION_DENIED, s.message()};
  }
  return {grpc::StatusCode::UNKNOWN, s.message()};
}

void ToProto(const TokenRow& t, v1::Token* out) {
  out->set_id(t.id);
  out->set_name(t.name);
  out->set_role(t.role);
  out->set_agent(t.agent);
  out->set_created_at(t.created_at);
  out->set_created_by(t.created_by);
  out->set_revoked_at(t.revoked_at);
  out->set_revoked_by(t.revoked_by);
}

void ToProto(const WorkloadRow& w, v1::Workload* out) {
  out->set_name(w.name);
  out->set_description(w.description);
  out->set_config_version(w.config_version);
  out->set_repeats(w.spec.run.repeats);
  out->set_spec_json(w.spec_json);
  out->set_created_at(w.created_at);
  out->set_spec_revision(w.spec_revision);
  out->set_archived(w.archived());
  out->set_archived_at(w.archived_at);
}

void ToProto(const WorkloadDetailRow& d, v1::WorkloadDetail* out) {
  const WorkloadRow& w = d.workload;
  ToProto(w, out->mutable_workload());
  for (const auto& p : w.spec.params) {
    auto* o = out->add_params();
    o->set_name(p.name);
    o->set_type(ParamTypeName(p.type));
    o->set_default_value(p.default_value);
    o->set_range(ParamRangeText(p));
    auto cur = w.config_params.find(p.name);
    o->set_current(cur == w.config_params.end() ? p.default_value : cur->second);
    o->set_description(p.description);
  }
  for (const auto& m : w.spec.metrics) {
    auto* o = out->add_metrics();
    o->set_name(m.name);
    o->set_role(RoleName(m.role));
    o->set_better(BetterName(m.better));
    o->set_unit(m.unit);
    o->set_source(MetricSourceText(m));
    o->set_min_effect(m.min_effect);
    o->set_tolerance(m.tolerance);
  }
  for (const auto& group : w.spec.coupled) {
    std::string g;
    for (const auto& name : group) g += (g.empty() ? "" : "+") + name;
    out->add_coupled(g);
  }
  out->set_run_policy(RunPolicyText(w.spec.run));
  out->set_baselines(d.history.baselines);
  out->set_experiments(d.history.experiments);
  out->set_runs(d.history.runs);
  out->set_log_entries(d.history.log_entries);
  out->set_archived_by(w.archived_by);
}

void ToProto(const AuditCheck& a, v1::AuditReport* out) {
  out->set_links(a.report.links);
  out->set_rows(a.rows);
  out->set_pending(a.pending);
  out->set_head_seq(a.report.head_seq);
  out->set_head_hash(a.report.head_hash);
  out->set_head_sealed_at(a.head_sealed_at);
  out->set_ok(!a.report.broken.has_value());
  if (const auto& b = a.report.broken) {
    auto* p = out->mutable_broken();
    p->set_seq(b->seq);
    p->set_source(b->source);
    p->set_row_id(b->row_id);
    p->set_kind(b->kind);
    p->set_detail(b->detail);
  }
}

void ToProto(const AuditExportRow& r, v1::AuditEntry* out) {
  const ChainEntry& e = r.entry;
  out->set_seq(r.seq);
  out->set_source(e.source);
  out->set_id(e.id);
  out->set_at(r.at);
  out->set_at_us(e.at_us);
  out->set_actor(e.actor);
  out->set_kind(e.kind);
  out->set_entity(e.entity);
  out->set_entity_id(e.entity_id);
  out->set_workload_id(e.workload_id);
  out->set_experiment_id(e.experiment_id);
  out->set_payload(e.payload);
  out->set_hash(r.hash);
  out->set_prev_hash(r.prev_hash);
}

void ToProto(const GoalRow& g, v1::Goal* out) {
  out->set_workload(g.workload);
  out->set_metric(g.goal.metric);
  out->set_target(g.goal.target);
  out->set_better(BetterName(g.goal.better));
  for (const auto& x : g.guardrails) out->add_guardrails(x);
  out->set_actor(g.actor);
  out->set_created_at(g.created_at);
  const GoalProgress& p = g.progress;
  out->set_measured(p.measured);
  out->set_config_version(p.config_version);
  out->set_baseline_id(p.baseline);
  out->set_level(p.level);
  out->set_ci_low(p.ci_low);
  out->set_ci_high(p.ci_high);
  out->set_n(p.n);
  out->set_attained(p.attained);
  out->set_reached(p.reached);
  out->set_reached_surely(p.reached_surely);
  for (const auto& s : p.steps) {
    auto* ps = out->add_steps();
    ps->set_version(s.version);
    ps->set_change(s.change);
    ps->set_experiment_id(s.experiment);
    ps->set_measured(s.ratio.has_value());
    ps->set_ratio(s.ratio.value_or(0));
    ps->set_ci_low(s.ci_low.value_or(0));
    ps->set_ci_high(s.ci_high.value_or(0));
  }
  out->set_moved(p.moved);
  out->set_summary(p.summary);
}

void ToProto(const AdvisorReport& r, v1::AdvisorReport* out) {
  for (const auto& a : r.advice) {
    auto* p = out->add_advice();
    p->set_rule(a.rule);
    p->set_bottleneck(a.bottleneck);
    p->set_score(a.score);
    for (const auto& e : a.evidence) p->add_evidence(e);
    for (const auto& c : a.changes) {
      auto* pc = p->add_changes();
      pc->set_param(c.param);
      pc->set_value(c.value);
      pc->set_why(c.why);
    }
    p->set_missing_params(a.missing_params);
    p->set_direction(a.direction);
    p->set_expected(a.expected);
    p->set_expect_arg(a.expect_arg);
    p->set_command(a.command);
  }
  for (const auto& n : r.not_checked) {
    auto* p = out->add_not_checked();
    p->set_rule(n.rule);
    p->set_needs(n.needs);
  }
  for (const auto& f : r.checked_fine) out->add_checked_fine(f);
}

void ToProto(const BaselineRow& b, v1::Baseline* out) {
  out->set_id(b.id);
  out->set_workload(b.workload);
  out->set_purpose(b.purpose);
  out->set_spec_revision(b.spec_revision);
  out->set_config_version(b.config_version);
  out->set_state(b.state);
  out->set_repeats(b.repeats);
  out->set_runs_succeeded(b.runs_succeeded);
  out->set_runs_failed(b.runs_failed);
  out->set_runs_active(b.runs_active);
  out->set_reason(b.reason);
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
  out->set_live(r.live);
  out->set_id(r.id);
  out->set_baseline_id(r.baseline_id);
  out->set_workload(r.workload);
  out->set_index(r.idx);
  out->set_experiment_id(r.experiment_id);
  out->set_arm(r.arm);
  out->set_purpose(r.purpose);
  out->set_node(r.node);
  out->set_slot(r.slot);
  out->set_external_id(r.external_id);
  out->set_placement(r.placement);
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
    pm->set_usable(m.usable);
    pm->set_detected_warmup(m.detected_warmup);
    pm->set_warnings(m.warnings);
    pm->set_source(m.source);
    pm->set_has_value(m.value.has_value());
    pm->set_value(m.value.value_or(0));
    pm->set_pace(m.pace.value_or(0));
    pm->set_value_how(m.value_how);
  }
}

void ToProto(const RunSamplesRow& r, v1::RunSamples* out) {
  out->set_run_id(r.run_id);
  out->set_workload(r.workload);
  out->set_attempt(r.attempt);
  out->set_state(r.state);
  out->set_live(r.live);
  out->set_max_points(r.max_points);
  const auto point = [](const SamplePoint& p, v1::SamplePoint* o) {
    o->set_step(p.step);
    o->set_value(p.value);
    o->set_phase(std::string(PhaseName(p.phase)));
  };
  for (const auto& m : r.metrics) {
    auto* pm = out->add_metrics();
    pm->set_metric(m.metric);
    pm->set_samples(m.samples);
    for (const auto& p : m.points) point(p, pm->add_points());
    pm->set_points_total(m.points_total);
    pm->set_declared_warmup_steps(m.declared_warmup_steps);
    pm->set_warmup_samples(m.analysis.declared_warmup + m.analysis.detected_warmup);
    pm->set_detected_warmup(m.analysis.detected_warmup);
    pm->set_warmup_end(m.warmup_end.value_or(0));
    pm->set_steady(m.analysis.steady);
    pm->set_steady_from(m.steady_from.value_or(0));
    pm->set_steady_to(m.steady_to.value_or(0));
    pm->set_median(m.analysis.stats.n > 0 ? m.analysis.stats.median : 0);
    pm->set_usable(m.analysis.usable());
    for (const auto& k : m.skipped) {
      auto* pk = pm->add_skipped();
      pk->set_step(k.step);
      pk->set_value(k.value);
      pk->set_skip_step(k.skip_step);
      pk->set_tag(k.tag);
    }
    pm->set_skipped_total(m.skipped_total);
    for (const auto& p : m.outliers) point(p, pm->add_outliers());
    pm->set_outliers_total(m.outliers_total);
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
  out->set_busy(a.busy);
  out->set_unhealthy(a.unhealthy);
  out->set_isolated_slots(a.isolated_slots);
  out->set_executor(a.executor);
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
    r->set_parser(m.parser);
    r->set_field(m.field);
    r->set_expr(m.expr);
    r->set_prometheus(m.prometheus);
    r->set_match(m.match);
    r->set_every_ms(m.every_ms);
    r->set_agg(m.agg);
    r->set_tensorboard(m.tensorboard);
  }
  out->set_timeout_ms(p.timeout_ms);
  out->set_duration_ms(p.duration_ms);
  out->set_profile(p.profile);
  if (!p.resources.empty()) {
    auto* r = out->mutable_resources();
    r->set_nodes(p.resources.nodes);
    r->set_gpus_per_node(p.resources.gpus_per_node);
    r->set_cpus_per_task(p.resources.cpus_per_task);
    r->set_mem_mb(p.resources.mem_mb);
    r->set_time_ms(p.resources.time_ms);
  }
  out->set_experiment_id(p.experiment_id);
  out->set_arm(p.arm);
}

void ToProto(const Change& c, v1::Change* out) {
  for (const auto& [k, v] : c.from) (*out->mutable_from())[k] = v;
  for (const auto& [k, v] : c.to) (*out->mutable_to())[k] = v;
  out->set_coupled(c.coupled);
  out->set_description(c.Describe());
}

void ToProto(const HypothesisRow& h, v1::Hypothesis* out) {
  out->set_id(h.id);
  out->set_workload(h.workload);
  out->set_baseline_id(h.baseline_id);
  ToProto(h.change, out->mutable_change());
  out->set_expect(h.expect);
  out->set_evidence(h.evidence);
  out->set_statement(h.statement);
  out->set_actor(h.actor);
  out->set_created_at(h.created_at);
  out->set_locked(h.locked);
  out->set_experiment_id(h.experiment_id);
  for (const auto& e : h.earlier) out->add_earlier(e);
}

void ToProto(const MetricVerdict& m, v1::MetricVerdict* p) {
  p->set_metric(m.metric);
  p->set_unit(m.unit);
  p->set_better(m.better);
  p->set_role(m.role);
  p->set_n_control(m.n_control);
  p->set_n_variant(m.n_variant);
  p->set_control_median(m.control_median);
  p->set_variant_median(m.variant_median);
  p->set_ratio(m.ratio);
  p->set_ci_low(m.ci_low);
  p->set_ci_high(m.ci_high);
  p->set_ci90_low(m.ci90_low);
  p->set_ci90_high(m.ci90_high);
  p->set_p_value(m.p_value);
  p->set_decision(m.decision);
  p->set_guardrail(m.guardrail);
  p->set_note(m.note);
  p->set_mw_p(m.mw_p);
  p->set_boot_low(m.boot_low);
  p->set_boot_high(m.boot_high);
  p->set_estimated(m.estimated);
  p->set_tested(m.tested);
}

void ToProto(const ExperimentRow& e, v1::Experiment* out) {
  out->set_id(e.id);
  out->set_spec_revision(e.spec_revision);
  out->set_batch_id(e.batch_id);
  if (e.verdict) out->set_verdict_json(VerdictToJson(*e.verdict));
  out->set_placement(e.placement);
  out->set_goal_note(e.goal_note);
  out->set_again_reason(e.again_reason);
  if (e.verdict && !e.verdict->correction.empty()) {
    out->set_correction(e.verdict->correction);
    out->set_unadjusted_decision(e.verdict->unadjusted_decision);
    out->set_adjusted_p(e.verdict->adjusted_p.value_or(1.0));
  }
  out->set_workload(e.workload);
  out->set_baseline_id(e.baseline_id);
  out->set_hypothesis_id(e.hypothesis_id);
  out->set_hypothesis_expect(e.hypothesis_expect);
  out->set_config_version(e.config_version);
  ToProto(e.change, out->mutable_change());
  out->set_repeats(e.repeats);
  out->set_state(e.state);
  out->set_decision(e.decision);
  out->set_runs_total(e.runs_total);
  out->set_runs_done(e.runs_done);
  out->set_runs_failed(e.runs_failed);
  out->set_runs_active(e.runs_active);
  out->set_frozen_version(e.frozen_version);
  out->set_frozen_by(e.frozen_by);
  out->set_freeze_reason(e.freeze_reason);
  out->set_actor(e.actor);
  out->set_created_at(e.created_at);
  out->set_decided_at(e.decided_at);
  out->set_frozen_at(e.frozen_at);
  out->set_agent(e.agent);
  const auto arm = [](const ArmProgress& a, v1::ArmProgress* p) {
    p->set_queued(a.queued);
    p->set_active(a.active);
    p->set_succeeded(a.succeeded);
    p->set_failed(a.failed);
    p->set_cancelled(a.cancelled);
    p->set_compared(a.compared);
  };
  arm(e.arms.control, out->mutable_control_arm());
  arm(e.arms.variant, out->mutable_variant_arm());
  if (e.interim) {
    const Verdict& v = e.interim->verdict;
    out->set_interim_pairs(v.pairs);
    out->set_min_pairs(v.min_pairs);
    out->set_interim_ci(e.interim->ci);
    if (!v.primary.empty()) out->set_primary(v.primary);
    for (const auto& m : v.metrics) ToProto(m, out->add_interim());
  }
  if (!e.verdict) return;
  const Verdict& v = *e.verdict;
  out->set_primary(v.primary);
  out->set_pairs(v.pairs);
  out->set_max_pairs(v.max_pairs);
  out->set_drift(v.drift);
  out->set_critical(v.critical);
  for (const auto& r : v.reasons) out->add_reasons(r);
  out->set_hypothesis_result(v.hypothesis);
  out->set_hypothesis_note(v.hypothesis_note);
  for (const auto& m : v.metrics) ToProto(m, out->add_metrics());
}

void ToProto(const ConfigRow& c, v1::Config* out) {
  out->set_workload(c.workload);
  out->set_spec_json(c.spec_json);
  for (const auto& v : c.lineage) {
    auto* p = out->add_lineage();
    p->set_version(v.version);
    for (const auto& [k, val] : v.params) (*p->mutable_params())[k] = val;
    if (v.change) ToProto(*v.change, p->mutable_change());
    p->set_experiment_id(v.experiment_id);
    p->set_created_at(v.created_at);
    p->set_current(v.current);
    p->set_reason(v.reason);
    if (v.current) {
      *out->mutable_current() = *p;
      *out->mutable_selected() = *p;
    }
  }
}

void ToProto(const LogRow& l, v1::LogEntry* out) {
  out->set_experiment_id(l.experiment_id);
  out->set_workload(l.workload);
  out->set_at(l.at);
  out->set_actor(l.actor);
  out->set_frozen(l.frozen);
  out->set_entry_json(l.entry_json);
  out->set_kind(l.kind);
  auto j = nlohmann::json::parse(l.entry_json, nullptr, false);
  if (!j.is_object()) return;
  out->set_change(j.value("change", ""));
  out->set_params(j.value("params", ""));
  out->set_decision(j.value("decision", ""));
  if (j.contains("hypothesis") && j["hypothesis"].is_object()) {
    const auto& h = j["hypothesis"];
    out->set_hypothesis_id(h.value("id", int64_t{0}));
    out->set_expected(h.value("expected", ""));
    out->set_hypothesis_result(h.value("result", ""));
  }
  if (j.contains("primary") && j["primary"].is_object()) {
    const auto& p = j["primary"];
    out->set_primary_metric(p.value("metric", ""));
    // null (no estimate was made): 0, which every reader shows as "—".
    auto num = [&p](const char* key) {
      auto it = p.find(key);
      return it != p.end() && it->is_number() ? it->get<double>() : 0.0;
    };
    out->set_ratio(num("ratio"));
    out->set_ci_low(num("ci_low"));
    out->set_ci_high(num("ci_high"));
    out->set_p_value(num("p_value"));
  }
  std::string others, guards;
  for (const auto& m : j.value("others", nlohmann::json::array()))
    others += (others.empty() ? "" : "; ") + m.value("metric", std::string()) + " " +
              m.value("effect", std::string()) + " " + m.value("decision", std::string());
  for (const auto& g : j.value("guardrails", nlohmann::json::array()))
    guards += (guards.empty() ? "" : "; ") + g.value("metric", std::string()) + " " +
              g.value("status", std::string());
  out->set_others(others);
  out->set_guardrails(guards);
}

void ToProto(const StabilityRow& s, v1::StabilityRun* out) {
  out->set_baseline_id(s.baseline_id);
  out->set_run_id(s.run_id);
  out->set_config_version(s.config_version);
  out->set_state(s.state);
  out->set_duration_s(s.duration_s);
  out->set_started_at(s.started_at);
  out->set_finished_at(s.finished_at);
  out->set_verdict(s.verdict);
  out->set_message(s.message);
}

void ToProto(const RegressionRecord& g, v1::RecordedRegression* out) {
  out->set_id(g.id);
  out->set_kind(g.kind);
  out->set_metric(g.metric);
  out->set_first_bad_run(g.first_bad_run);
  out->set_before(g.before.value_or(0));
  out->set_after(g.after.value_or(0));
  out->set_p(g.p.value_or(0));
  out->set_message(g.message);
  out->set_detected_at(g.detected_at);
  out->set_config_version(g.config_version);
  out->set_resolved_at(g.resolved_at);
  out->set_resolved_by(g.resolved_by);
  out->set_resolution(g.resolution);
}

}  // namespace tunectl
