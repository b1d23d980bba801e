-- Credential lifecycle: an optional expiry on API tokens and ingest credentials (refused from that
-- instant on), and the deployment's shared secrets (the key that seals pagination cursors), kept in
-- the database so that every replica of one store signs and checks with the same key.
-- migrate:up
ALTER TABLE api_tokens ADD COLUMN expires_at TEXT;
ALTER TABLE ingest_credentials ADD COLUMN expires_at TEXT;
CREATE TABLE shared_secrets (
    name TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX audit_log_object_idx ON audit_log (object_type, object_id, id);
-- migrate:down
DROP INDEX audit_log_object_idx;
DROP TABLE shared_secrets;
ALTER TABLE ingest_credentials DROP COLUMN expires_at;
ALTER TABLE api_tokens DROP COLUMN expires_at;
