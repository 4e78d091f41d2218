-- The session layer at cluster scale: event-driven dispatch across servers, nodes that report
-- themselves unhealthy, and create requests that a retry cannot repeat.

-- A node that cannot run jobs (its runs directory is not writable, its disk is full) says why;
-- nothing is dispatched there until it reports itself healthy again.
ALTER TABLE agents ADD COLUMN unhealthy text NOT NULL DEFAULT '';

-- Every server LISTENs on tunectl_dispatch: a run queued or asked to stop, by any server, wakes
-- every dispatcher at once (one notification per transaction; PostgreSQL folds duplicates).
CREATE FUNCTION tunectl_notify_dispatch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM changed WHERE state = 'queued' OR cancel_requested) THEN
    PERFORM pg_notify('tunectl_dispatch', '');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER runs_notify_insert AFTER INSERT ON runs REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION tunectl_notify_dispatch();
CREATE TRIGGER runs_notify_update AFTER UPDATE ON runs REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION tunectl_notify_dispatch();

-- Cancels to send, for all agents in one query.
CREATE INDEX runs_cancel_requested ON runs (agent_id) WHERE cancel_requested;

-- Create requests carry a client key: a retry of the same request (after a timeout, say) returns
-- what the first one created instead of creating it twice.
CREATE TABLE requests (
  key        text PRIMARY KEY CHECK (length(key) BETWEEN 8 AND 128),
  kind       text NOT NULL,
  entity_id  bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT tunectl_now()
);
