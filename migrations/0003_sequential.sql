-- Sequential experiments: pairs are queued one look at a time; non-finite metric values are kept
-- count of (a NaN loss in a variant vetoes "improved").
ALTER TABLE experiments ADD COLUMN min_pairs int NOT NULL DEFAULT 4,
                        ADD COLUMN queued_pairs int NOT NULL DEFAULT 0;
ALTER TABLE run_summaries ADD COLUMN nonfinite int NOT NULL DEFAULT 0;
-- Within-run analysis (core/changepoint.h): steady-state window, health, and whether the run is
-- fit to be compared (its primary metric has a steady state and no slowdown).
ALTER TABLE run_summaries ADD COLUMN usable boolean NOT NULL DEFAULT true,
                          ADD COLUMN detected_warmup int NOT NULL DEFAULT 0,
                          ADD COLUMN mad double precision,
                          ADD COLUMN lag1 double precision,
                          ADD COLUMN warnings text NOT NULL DEFAULT '';
