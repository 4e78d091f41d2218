-- tunectl schema v1: workloads, config versions, agents, baselines, runs, metrics, audit.
-- Forward-only. Applied by tunectl-server under an advisory lock; see server/store/migrations.cc.

CREATE FUNCTION tunectl_ts(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

CREATE TABLE workloads (
  id            bigserial PRIMARY KEY,
  name          text NOT NULL UNIQUE,
  description   text NOT NULL DEFAULT '',
  spec          json NOT NULL,           -- validated, normalised spec (json keeps declaration order)
  spec_text     text NOT NULL,           -- as the user submitted it
  spec_revision int NOT NULL DEFAULT 1,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Immutable parameter sets. v1 = the spec's defaults; later versions = parent + one change.
CREATE TABLE config_versions (
  id          bigserial PRIMARY KEY,
  workload_id bigint NOT NULL REFERENCES workloads(id),
  version     int NOT NULL,
  params      jsonb NOT NULL,
  parent_id   bigint REFERENCES config_versions(id),
  change      jsonb,
  is_current  boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workload_id, version)
);
CREATE UNIQUE INDEX config_versions_one_current ON config_versions (workload_id) WHERE is_current;

CREATE TABLE agents (
  id         bigserial PRIMARY KEY,
  name       text NOT NULL UNIQUE,
  labels     jsonb NOT NULL DEFAULT '{}',
  slots      int NOT NULL CHECK (slots >= 0),
  version    text NOT NULL DEFAULT '',
  connected  boolean NOT NULL DEFAULT false,
  session    text,                       -- session id of the server instance holding its stream
  last_seen  timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE baselines (
  id          bigserial PRIMARY KEY,
  workload_id bigint NOT NULL REFERENCES workloads(id),
  config_id   bigint NOT NULL REFERENCES config_versions(id),
  repeats     int NOT NULL CHECK (repeats > 0),
  state       text NOT NULL CHECK (state IN ('running', 'completed', 'failed', 'cancelled')),
  actor       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);

CREATE TABLE baseline_summaries (
  baseline_id bigint NOT NULL REFERENCES baselines(id),
  metric      text NOT NULL,
  n           int NOT NULL,
  median      double precision NOT NULL,
  mean        double precision NOT NULL,
  stddev      double precision NOT NULL,
  cv          double precision NOT NULL,
  min         double precision NOT NULL,
  max         double precision NOT NULL,
  PRIMARY KEY (baseline_id, metric)
);

CREATE TABLE runs (
  id           bigserial PRIMARY KEY,
  workload_id  bigint NOT NULL REFERENCES workloads(id),
  baseline_id  bigint REFERENCES baselines(id),
  config_id    bigint NOT NULL REFERENCES config_versions(id),
  idx          int NOT NULL DEFAULT 1,     -- position within its baseline / experiment
  params       jsonb NOT NULL,
  launch       jsonb NOT NULL,             -- resolved argv/env/files, metric rules, timeout, warm-up
  selector     jsonb NOT NULL DEFAULT '{}',
  state        text NOT NULL CHECK (state IN ('queued', 'assigned', 'running', 'succeeded',
                                              'failed', 'cancelled', 'lost')),
  attempt      int NOT NULL DEFAULT 1,
  max_attempts int NOT NULL DEFAULT 3,
  agent_id     bigint REFERENCES agents(id),
  exit_code    int,
  signal       int,
  reason       text NOT NULL DEFAULT '',
  stderr_tail  text NOT NULL DEFAULT '',
  lines        bigint,
  created_at   timestamptz NOT NULL DEFAULT now(),
  assigned_at  timestamptz,
  started_at   timestamptz,
  finished_at  timestamptz
);
CREATE INDEX runs_queued ON runs (id) WHERE state = 'queued';
CREATE INDEX runs_active_agent ON runs (agent_id) WHERE state IN ('assigned', 'running');
CREATE INDEX runs_baseline ON runs (baseline_id);

-- One row per accepted metric batch: the idempotency key for resends.
CREATE TABLE metric_batches (
  run_id      bigint NOT NULL REFERENCES runs(id),
  attempt     int NOT NULL,
  seq         bigint NOT NULL,
  samples     int NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, attempt, seq)
);

CREATE TABLE metric_samples (
  run_id  bigint NOT NULL,
  attempt int NOT NULL,
  metric  text NOT NULL,
  step    bigint NOT NULL,
  value   double precision NOT NULL,
  line_no bigint NOT NULL DEFAULT 0
);
CREATE INDEX metric_samples_run ON metric_samples (run_id, attempt, metric, step);

CREATE TABLE run_summaries (
  run_id  bigint NOT NULL REFERENCES runs(id),
  metric  text NOT NULL,
  samples int NOT NULL,
  steady  int NOT NULL,
  median  double precision,
  min     double precision,
  max     double precision,
  PRIMARY KEY (run_id, metric)
);

-- Every state change, written in the same transaction as the change. Append-only.
CREATE TABLE audit_events (
  id        bigserial PRIMARY KEY,
  at        timestamptz NOT NULL DEFAULT now(),
  actor     text NOT NULL,
  kind      text NOT NULL,
  entity    text NOT NULL,
  entity_id bigint,
  detail    jsonb NOT NULL DEFAULT '{}'
);
