-- Off-peak schedules and batches of single-variable experiments dispatched inside their windows.
CREATE TABLE schedules (
  id         bigserial PRIMARY KEY,
  name       text NOT NULL UNIQUE,
  window_spec text,                 -- "Mon-Fri 01:00-06:00", or NULL with cron
  cron       text,                  -- "0 22 * * Sat", with duration_s
  duration_s bigint NOT NULL DEFAULT 0,
  tz         text NOT NULL,
  max_agents int NOT NULL DEFAULT 0,
  actor      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((window_spec IS NULL) <> (cron IS NULL))
);

CREATE TABLE batches (
  id          bigserial PRIMARY KEY,
  workload_id bigint NOT NULL REFERENCES workloads(id),
  baseline_id bigint NOT NULL REFERENCES baselines(id),
  schedule_id bigint REFERENCES schedules(id),
  correction  text NOT NULL DEFAULT 'holm' CHECK (correction IN ('holm', 'bh')),
  state       text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'cancelled')),
  actor       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE experiments ADD COLUMN batch_id bigint REFERENCES batches(id),
                        ADD COLUMN schedule_id bigint REFERENCES schedules(id),
                        ADD COLUMN expected_s int NOT NULL DEFAULT 0;  -- a run's expected duration

-- An agent whose idle probe fails (production work on the node) gets no new runs.
ALTER TABLE agents ADD COLUMN busy boolean NOT NULL DEFAULT false;
