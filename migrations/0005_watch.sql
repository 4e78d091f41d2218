-- Regression watch after a freeze: periodic checks of the current config inside a schedule's
-- windows ("watches"), long stability runs, and the regressions they confirm. Schedules get a
-- window-end policy; runs carry their schedule so every kind of run can be gated by windows.
ALTER TABLE schedules ADD COLUMN on_window_end text NOT NULL DEFAULT 'finish'
  CHECK (on_window_end IN ('finish', 'requeue'));

ALTER TABLE runs ADD COLUMN schedule_id bigint REFERENCES schedules(id),
                 ADD COLUMN expected_s int NOT NULL DEFAULT 0,      -- expected duration
                 ADD COLUMN cancel_reason text NOT NULL DEFAULT ''; -- 'window': requeue, not fail
UPDATE runs r SET schedule_id = e.schedule_id, expected_s = e.expected_s
  FROM experiments e WHERE e.id = r.experiment_id AND e.schedule_id IS NOT NULL;
CREATE INDEX runs_schedule_active ON runs (schedule_id) WHERE state IN ('assigned', 'running');

CREATE TABLE watches (
  id          bigserial PRIMARY KEY,
  workload_id bigint NOT NULL REFERENCES workloads(id),
  schedule_id bigint NOT NULL REFERENCES schedules(id),
  repeats     int NOT NULL CHECK (repeats > 0),
  state       text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'stopped')),
  last_window bigint NOT NULL DEFAULT 0,  -- Unix start of the last window a check was queued in
  actor       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX watches_one_active ON watches (workload_id) WHERE state = 'active';

-- A baseline is a measurement of a config; 'check' ones come from a watch, 'stability' ones are
-- one long run (duration_s) judged within itself. Only 'baseline' ones anchor experiments.
ALTER TABLE baselines ADD COLUMN purpose text NOT NULL DEFAULT 'baseline'
                        CHECK (purpose IN ('baseline', 'check', 'stability')),
                      ADD COLUMN duration_s bigint NOT NULL DEFAULT 0,
                      ADD COLUMN watch_id bigint REFERENCES watches(id);

-- Confirmed regressions of a config: a change point in the run series, or a stability run that
-- degraded within itself. Recorded once; each also writes a 'regression' tuning-log entry.
CREATE TABLE regressions (
  id            bigserial PRIMARY KEY,
  workload_id   bigint NOT NULL REFERENCES workloads(id),
  config_id     bigint NOT NULL REFERENCES config_versions(id),
  metric        text NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('change_point', 'stability')),
  first_bad_run bigint NOT NULL REFERENCES runs(id),
  before        double precision,
  after         double precision,
  p             double precision,
  message       text NOT NULL,
  detected_at   timestamptz NOT NULL DEFAULT now(),
  resolved_at   timestamptz,            -- a person said what fixed it (its alert stops)
  resolved_by   text,
  resolution    text,
  UNIQUE (config_id, metric, kind, first_bad_run)
);

ALTER TABLE tuning_log DROP CONSTRAINT tuning_log_kind_check;
ALTER TABLE tuning_log ADD CONSTRAINT tuning_log_kind_check
  CHECK (kind IN ('decided', 'frozen', 'correction', 'regression', 'resolved'));
