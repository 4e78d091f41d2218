-- The schema protects its own invariants (one rule in one place: the store's checks are not the
-- only guard), and indexes for the hot queries.

-- A run measures either a baseline or an experiment, at a unique position within it. (A frozen
-- config's derived baseline reaches its runs through baselines.source_experiment_id instead.)
ALTER TABLE runs ADD CONSTRAINT runs_one_owner CHECK (num_nonnulls(baseline_id, experiment_id) = 1),
                 ADD CONSTRAINT runs_baseline_idx UNIQUE (baseline_id, idx),
                 ADD CONSTRAINT runs_experiment_idx UNIQUE (experiment_id, idx);
-- The unique indexes above lead with the same columns.
DROP INDEX runs_baseline;
DROP INDEX runs_experiment;

-- A hypothesis is tested by one experiment; an experiment is decided once and frozen once.
CREATE UNIQUE INDEX experiments_one_per_hypothesis ON experiments (hypothesis_id)
  WHERE hypothesis_id IS NOT NULL;
CREATE UNIQUE INDEX tuning_log_one_decided ON tuning_log (experiment_id) WHERE kind = 'decided';
CREATE UNIQUE INDEX tuning_log_one_frozen ON tuning_log (experiment_id) WHERE kind = 'frozen';

-- Hot queries: an experiment's log entries, a batch's experiments, a config's succeeded runs
-- (the regression watch's series, read on every finished run).
CREATE INDEX tuning_log_experiment_kind ON tuning_log (experiment_id, kind);
CREATE INDEX experiments_batch ON experiments (batch_id);
CREATE INDEX runs_config_succeeded ON runs (config_id) WHERE state = 'succeeded';
