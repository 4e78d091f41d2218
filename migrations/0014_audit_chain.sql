-- Tamper evidence (issue 15): every audit event and tuning-log entry is covered, in the order the
-- sealer (the leader server, about once a second) saw them committed, by one link of a hash chain:
-- hash = SHA-256(previous hash ‖ the row's canonical serialisation), core/audit_chain.h. The chain
-- is append-only like the tables it covers, and none of the three can be truncated.
CREATE TABLE audit_chain (
  seq       bigint PRIMARY KEY CHECK (seq > 0),
  source    text NOT NULL CHECK (source IN ('audit', 'log')),
  row_id    bigint NOT NULL,
  hash      text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
  sealed_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (source, row_id)
);
CREATE TRIGGER audit_chain_append_only BEFORE UPDATE OR DELETE ON audit_chain
  FOR EACH ROW EXECUTE FUNCTION tunectl_append_only();

CREATE FUNCTION tunectl_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: it cannot be truncated', TG_TABLE_NAME;
END $$;
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION tunectl_no_truncate();
CREATE TRIGGER tuning_log_no_truncate BEFORE TRUNCATE ON tuning_log
  FOR EACH STATEMENT EXECUTE FUNCTION tunectl_no_truncate();
CREATE TRIGGER audit_chain_no_truncate BEFORE TRUNCATE ON audit_chain
  FOR EACH STATEMENT EXECUTE FUNCTION tunectl_no_truncate();

-- The sealer looks at recent rows only (core kSealHorizonMs).
CREATE INDEX audit_events_at ON audit_events (at);
