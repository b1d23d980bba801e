-- Reads scoped to one platform and cloud (ingest credentials, the scoped event listings).
-- migrate:up
CREATE INDEX events_scope_idx ON events (platform, cloud, timestamp);
-- migrate:down
DROP INDEX events_scope_idx;
