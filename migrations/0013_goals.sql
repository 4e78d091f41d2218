-- Step 2 of the loop (issue 14): an experiment that tests a change already decided on the same
-- config says why (--again --reason); a workload's quantified goal, one current per workload.
ALTER TABLE experiments ADD COLUMN again_reason text;

CREATE TABLE goals (
  id          bigserial PRIMARY KEY,
  workload_id bigint NOT NULL REFERENCES workloads(id),
  metric      text NOT NULL,
  target      double precision NOT NULL,
  guardrails  json NOT NULL DEFAULT '[]',  -- ["mfu >= 0.45", ...] as written, each checked
  actor       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  replaced_at timestamptz                  -- set when a newer goal of the workload replaces it
);
CREATE UNIQUE INDEX goals_current ON goals (workload_id) WHERE replaced_at IS NULL;
