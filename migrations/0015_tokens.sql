-- Identities (issue 15): bearer tokens, stored only as SHA-256 hashes, each with one role; an
-- agent token is bound to the one agent name it may register as. A token is revoked, never
-- deleted, so the actor of every audit event stays explainable.
CREATE TABLE tokens (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9._@-]{0,62}$'),
  role        text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin', 'agent')),
  agent       text CHECK ((role = 'agent') = (agent IS NOT NULL)),
  hash        text NOT NULL UNIQUE CHECK (hash ~ '^[0-9a-f]{64}$'),
  created_at  timestamptz NOT NULL DEFAULT tunectl_now(),
  created_by  text NOT NULL,
  revoked_at  timestamptz,
  revoked_by  text
);
-- One live token per name: a name in the audit trail means one identity at a time.
CREATE UNIQUE INDEX tokens_live_name ON tokens (name) WHERE revoked_at IS NULL;
CREATE TRIGGER tokens_no_delete BEFORE DELETE ON tokens
  FOR EACH ROW EXECUTE FUNCTION tunectl_append_only();
