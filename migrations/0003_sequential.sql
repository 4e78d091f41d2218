-- Sequential experiments: pairs are queued one look at a time; non-finite metric values are kept
-- count of (a NaN loss in a variant vetoes "improved").
ALTER TABLE experiments ADD COLUMN min_pairs int NOT NULL DEFAULT 4,
                        ADD COLUMN queued_pairs int NOT NULL DEFAULT 0;
ALTER TABLE run_summaries ADD COLUMN nonfinite int NOT NULL DEFAULT 0;
