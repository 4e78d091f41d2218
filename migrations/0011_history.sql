-- History that pages (issue 11): every list reads one page by keyset (id below the previous
-- page's, newest first, optionally by workload and since a time), and the regression watch reads
-- only the newest points of a config's series. These are the indexes those queries walk.

-- The tuning log: by workload, and since a time.
CREATE INDEX tuning_log_workload_id ON tuning_log (workload_id, id);
CREATE INDEX tuning_log_at ON tuning_log (at);

-- Experiments and hypotheses: by workload, and since a time; the experiment a config was frozen
-- from (its variant runs are part of that config's series).
CREATE INDEX experiments_workload_id ON experiments (workload_id, id);
CREATE INDEX experiments_created_at ON experiments (created_at);
CREATE INDEX experiments_frozen_config ON experiments (frozen_config_id)
  WHERE frozen_config_id IS NOT NULL;
CREATE INDEX hypotheses_workload_id ON hypotheses (workload_id, id);
CREATE INDEX hypotheses_created_at ON hypotheses (created_at);

-- Baselines as listed (measurements, not periodic checks or stability runs), by workload, and
-- since a time.
CREATE INDEX baselines_listed ON baselines (id) WHERE purpose = 'baseline';
CREATE INDEX baselines_listed_workload ON baselines (workload_id, id) WHERE purpose = 'baseline';
CREATE INDEX baselines_created_at ON baselines (created_at);

-- Runs since a time; batches since a time; a workload's recorded regressions.
CREATE INDEX runs_created_at ON runs (created_at);
CREATE INDEX batches_created_at ON batches (created_at);
CREATE INDEX regressions_workload_id ON regressions (workload_id, id);

-- A config's series, newest first: the succeeded runs of the config in finishing order. It leads
-- with the same column as runs_config_succeeded (0006), which it replaces.
CREATE INDEX runs_config_finished ON runs (config_id, finished_at DESC, id DESC)
  WHERE state = 'succeeded';
DROP INDEX runs_config_succeeded;
