-- Hypotheses, single-variable experiments, freeze lineage and the append-only tuning log.

CREATE TABLE hypotheses (
  id               bigserial PRIMARY KEY,
  workload_id      bigint NOT NULL REFERENCES workloads(id),
  baseline_id      bigint NOT NULL REFERENCES baselines(id),
  change           json NOT NULL,          -- {"from": {...}, "to": {...}, "coupled": false}
  expect_metric    text NOT NULL,
  expect_direction int NOT NULL CHECK (expect_direction IN (-1, 0, 1)),
  expect_size      double precision,
  expect_text      text NOT NULL,
  evidence         text NOT NULL DEFAULT '',
  statement        text NOT NULL DEFAULT '',
  actor            text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  locked_at        timestamptz,            -- set when its experiment starts; no change after
  experiment_id    bigint
);

CREATE TABLE experiments (
  id                bigserial PRIMARY KEY,
  workload_id       bigint NOT NULL REFERENCES workloads(id),
  baseline_id       bigint NOT NULL REFERENCES baselines(id),
  hypothesis_id     bigint REFERENCES hypotheses(id),
  control_config_id bigint NOT NULL REFERENCES config_versions(id),
  change            json NOT NULL,
  variant_params    jsonb NOT NULL,
  repeats           int NOT NULL CHECK (repeats > 0),
  state             text NOT NULL CHECK (state IN ('running', 'decided', 'frozen', 'closed',
                                                   'cancelled')),
  decision          text CHECK (decision IN ('improved', 'regressed', 'unchanged', 'inconclusive')),
  verdict           json,
  agent_id          bigint REFERENCES agents(id),   -- runs stay on this agent where possible
  actor             text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  decided_at        timestamptz,
  frozen_config_id  bigint REFERENCES config_versions(id),
  frozen_at         timestamptz,
  frozen_by         text,
  freeze_reason     text
);
ALTER TABLE hypotheses ADD FOREIGN KEY (experiment_id) REFERENCES experiments(id);

ALTER TABLE runs ADD COLUMN experiment_id bigint REFERENCES experiments(id),
                 ADD COLUMN arm text CHECK (arm IN ('control', 'variant')),
                 ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
CREATE INDEX runs_experiment ON runs (experiment_id);

-- A frozen config's measured level: the experiment's variant runs.
ALTER TABLE baselines ADD COLUMN source_experiment_id bigint REFERENCES experiments(id);

CREATE TABLE tuning_log (
  id            bigserial PRIMARY KEY,
  at            timestamptz NOT NULL DEFAULT now(),
  workload_id   bigint NOT NULL REFERENCES workloads(id),
  experiment_id bigint REFERENCES experiments(id),
  kind          text NOT NULL CHECK (kind IN ('decided', 'frozen', 'correction')),
  actor         text NOT NULL,
  entry         json NOT NULL
);

CREATE FUNCTION tunectl_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: write a new entry instead', TG_TABLE_NAME;
END $$;
CREATE TRIGGER tuning_log_append_only BEFORE UPDATE OR DELETE ON tuning_log
  FOR EACH ROW EXECUTE FUNCTION tunectl_append_only();
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION tunectl_append_only();

CREATE FUNCTION tunectl_hypothesis_locked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.locked_at IS NOT NULL THEN
    RAISE EXCEPTION 'hypothesis % is locked since its experiment started', OLD.id;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER hypotheses_locked BEFORE UPDATE OR DELETE ON hypotheses
  FOR EACH ROW EXECUTE FUNCTION tunectl_hypothesis_locked();
