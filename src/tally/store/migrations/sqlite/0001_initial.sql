-- The tables of the reporting database. Instants are TEXT in one fixed-width UTC form
-- (YYYY-MM-DDTHH:MM:SS.ffffffZ) so that text order is time order; JSON is canonical TEXT.
-- migrate:up
CREATE TABLE events (
    event_id TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    received_at TEXT NOT NULL,
    event_type TEXT NOT NULL,
    platform TEXT NOT NULL,
    cloud TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT 'collector',
    payload TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (event_id, timestamp)
) WITHOUT ROWID;
CREATE INDEX events_resource_idx ON events (cloud, resource_type, resource_id, timestamp);
CREATE INDEX events_project_idx ON events (project_id, timestamp);
CREATE INDEX events_type_idx ON events (event_type, timestamp);
CREATE INDEX events_timestamp_idx ON events (timestamp, event_id);
-- Append-only: the record a bill is computed from is never rewritten.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TABLE current_resources (
    cloud TEXT NOT NULL,
    platform TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    state TEXT NOT NULL,
    size TEXT NOT NULL DEFAULT '{}',
    created_at TEXT,
    deleted_at TEXT,
    last_event_type TEXT NOT NULL,
    last_event_at TEXT NOT NULL,
    last_payload TEXT,
    first_event_at TEXT NOT NULL,
    last_received_at TEXT NOT NULL,
    last_event_id TEXT NOT NULL,
    PRIMARY KEY (cloud, resource_type, resource_id),
    CHECK (platform NOT IN ('meta', 'partner') AND cloud NOT IN ('meta', 'partner'))
);
CREATE INDEX current_resources_project_idx ON current_resources (project_id);
CREATE INDEX current_resources_type_state_idx ON current_resources (resource_type, state);

CREATE TABLE resource_types (
    platform TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    size_schema TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (platform, resource_type)
);

CREATE TABLE sync_runs (
    id TEXT PRIMARY KEY,
    cloud TEXT NOT NULL,
    started_at TEXT NOT NULL,
    completed_at TEXT,
    status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed')),
    stats TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX sync_runs_cloud_started_idx ON sync_runs (cloud, started_at DESC);

-- The per-cloud sync lock: a row with a lease, renewed while held, so a crashed holder's lock expires.
CREATE TABLE sync_locks (
    cloud TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    platform TEXT NOT NULL,
    cloud TEXT NOT NULL,
    external_id TEXT NOT NULL,
    name TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    UNIQUE (cloud, external_id),
    CHECK (platform = cloud OR (platform NOT IN ('meta', 'partner') AND cloud NOT IN ('meta', 'partner')))
);

CREATE TABLE project_relations (
    id TEXT PRIMARY KEY,
    source_id TEXT NOT NULL REFERENCES projects (id),
    target_id TEXT NOT NULL REFERENCES projects (id),
    relation_type TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    created_at TEXT NOT NULL,
    CHECK (source_id <> target_id)
);
CREATE UNIQUE INDEX project_relations_active_idx
    ON project_relations (source_id, target_id, relation_type) WHERE valid_to IS NULL;
CREATE INDEX project_relations_target_idx ON project_relations (target_id);

CREATE TABLE rejected_events (
    id TEXT PRIMARY KEY,
    received_at TEXT NOT NULL,
    reason TEXT NOT NULL,
    raw TEXT NOT NULL
);
CREATE INDEX rejected_events_received_idx ON rejected_events (received_at, id);

CREATE TABLE ingest_credentials (
    id TEXT PRIMARY KEY,
    platform TEXT NOT NULL,
    cloud TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    description TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);

CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'read_all', 'project')),
    project_ids TEXT NOT NULL DEFAULT '[]',
    description TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    CHECK (role <> 'project' OR json_array_length(project_ids) > 0)
);

CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    object_type TEXT NOT NULL,
    object_id TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_action_idx ON audit_log (action, id);
-- migrate:down
DROP TABLE audit_log;
DROP TABLE api_tokens;
DROP TABLE ingest_credentials;
DROP TABLE rejected_events;
DROP TABLE project_relations;
DROP TABLE projects;
DROP TABLE sync_locks;
DROP TABLE sync_runs;
DROP TABLE resource_types;
DROP TABLE current_resources;
DROP TRIGGER events_no_delete;
DROP TRIGGER events_no_update;
DROP TABLE events;
