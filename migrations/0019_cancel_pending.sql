-- Pending cancels: runs an agent holds whose cancel was asked for. The old index kept every run
-- ever cancelled (cancel_requested stays true once the run ends), so each dispatch pass walked it
-- once per connected agent; this one holds only the cancels still to deliver.
DROP INDEX IF EXISTS runs_cancel_requested;
CREATE INDEX runs_cancel_pending ON runs (agent_id) WHERE cancel_requested AND state IN ('assigned', 'running');
