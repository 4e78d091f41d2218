-- Verdicts a referee would sign: why a run failed (its cause, so two failures of one kind stop
-- an experiment), what the within-run analysis saw (slowdown, printed resolution, where the
-- steady window starts), and why a baseline failed.

ALTER TABLE runs ADD COLUMN failure_cause text NOT NULL DEFAULT '';

ALTER TABLE run_summaries ADD COLUMN slowdown boolean NOT NULL DEFAULT false,
                          ADD COLUMN resolution double precision NOT NULL DEFAULT 0,
                          ADD COLUMN levels int NOT NULL DEFAULT 0,
                          ADD COLUMN steady_from_step bigint NOT NULL DEFAULT 0,
                          ADD COLUMN last_step bigint NOT NULL DEFAULT 0;

ALTER TABLE baselines ADD COLUMN reason text NOT NULL DEFAULT '';
