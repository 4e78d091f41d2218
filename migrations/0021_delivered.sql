-- Every run counts with the value it delivered (docs/statistics.md): per metric, the effective
-- value over the measured window (work over time for a rate, the mean for a per-step time), the
-- run's unimpeded pace, how the value was computed and where the measured window starts. Rows
-- stored before this have NULLs; readers fall back to the steady-state median.
ALTER TABLE run_summaries ADD COLUMN delivered double precision,
                          ADD COLUMN pace double precision,
                          ADD COLUMN aggregate text NOT NULL DEFAULT '',
                          ADD COLUMN measured_from_step bigint NOT NULL DEFAULT 0;
