-- One name, one live agent: the process that holds a name (its instance, chosen at agent start)
-- and the host it runs on, so a second agent that claims the name is refused and told who holds it.

ALTER TABLE agents ADD COLUMN instance text NOT NULL DEFAULT '',
                   ADD COLUMN host text NOT NULL DEFAULT '';
