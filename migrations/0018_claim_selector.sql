-- The claim reads the queue per selector: its distinct selectors by a skip scan, then the oldest
-- runs of each selector some asking agent satisfies, never the whole queue.
CREATE INDEX runs_queued_selector ON runs (selector, id) WHERE state = 'queued';
