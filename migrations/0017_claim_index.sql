-- The claim finds the queued runs kept on an agent through their experiment's agent.
CREATE INDEX experiments_agent ON experiments (agent_id) WHERE agent_id IS NOT NULL;
