-- The tables of the reporting database (plain PostgreSQL 15; no TimescaleDB needed).
-- migrate:up
CREATE TABLE events (
    event_id TEXT NOT NULL,
    timestamp TIMESTAMPTZ NOT NULL,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    event_type TEXT NOT NULL,
    platform TEXT NOT NULL,
    cloud TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT 'collector',
    payload JSONB NOT NULL DEFAULT '{}',
    PRIMARY KEY (event_id, timestamp)
);
CREATE INDEX events_resource_idx ON events (cloud, resource_type, resource_id, timestamp);
CREATE INDEX events_project_idx ON events (project_id, timestamp);
CREATE INDEX events_type_idx ON events (event_type, timestamp);
CREATE INDEX events_timestamp_idx ON events (timestamp, event_id);
-- Append-only: the record a bill is computed from is never rewritten.
CREATE FUNCTION tally_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only';
END;
$$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION tally_events_append_only();

CREATE TABLE current_resources (
    cloud TEXT NOT NULL,
    platform TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    state TEXT NOT NULL,
    size JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ,
    deleted_at TIMESTAMPTZ,
    last_event_type TEXT NOT NULL,
    last_event_at TIMESTAMPTZ NOT NULL,
    last_payload JSONB,
    first_event_at TIMESTAMPTZ NOT NULL,
    last_received_at TIMESTAMPTZ NOT NULL,
    last_event_id TEXT NOT NULL,
    PRIMARY KEY (cloud, resource_type, resource_id),
    CONSTRAINT current_resources_not_virtual
        CHECK (platform NOT IN ('meta', 'partner') AND cloud NOT IN ('meta', 'partner'))
) WITH (fillfactor = 70);  -- room on the page for HOT updates: every event rewrites its resource's row
CREATE INDEX current_resources_project_idx ON current_resources (project_id);
CREATE INDEX current_resources_type_state_idx ON current_resources (resource_type, state);

CREATE TABLE resource_types (
    platform TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    size_schema JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (platform, resource_type)
);

CREATE TABLE sync_runs (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    cloud TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    completed_at TIMESTAMPTZ,
    status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed')),
    stats JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX sync_runs_cloud_started_idx ON sync_runs (cloud, started_at DESC);

CREATE TABLE projects (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    platform TEXT NOT NULL,
    cloud TEXT NOT NULL,
    external_id TEXT NOT NULL,
    name TEXT,
    metadata JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (cloud, external_id),
    CONSTRAINT projects_virtual_platform
        CHECK (platform = cloud OR (platform NOT IN ('meta', 'partner') AND cloud NOT IN ('meta', 'partner')))
);

CREATE TABLE project_relations (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    source_id UUID NOT NULL REFERENCES projects (id),
    target_id UUID NOT NULL REFERENCES projects (id),
    relation_type TEXT NOT NULL,
    metadata JSONB NOT NULL DEFAULT '{}',
    valid_from TIMESTAMPTZ NOT NULL DEFAULT now(),
    valid_to TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (source_id <> target_id)
);
CREATE UNIQUE INDEX project_relations_active_idx
    ON project_relations (source_id, target_id, relation_type) WHERE valid_to IS NULL;
CREATE INDEX project_relations_target_idx ON project_relations (target_id);

CREATE TABLE rejected_events (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    reason TEXT NOT NULL,
    raw JSONB NOT NULL
);
CREATE INDEX rejected_events_received_idx ON rejected_events (received_at, id);

CREATE TABLE ingest_credentials (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    platform TEXT NOT NULL,
    cloud TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    description TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at TIMESTAMPTZ
);

CREATE TABLE api_tokens (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    token_hash TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'read_all', 'project')),
    project_ids UUID[] NOT NULL DEFAULT '{}',
    description TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at TIMESTAMPTZ,
    CHECK (role <> 'project' OR cardinality(project_ids) > 0)
);

CREATE TABLE audit_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at TIMESTAMPTZ NOT NULL DEFAULT now(),
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    object_type TEXT NOT NULL,
    object_id TEXT NOT NULL,
    details JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_action_idx ON audit_log (action, id);
-- migrate:down
DROP TABLE audit_log;
DROP TABLE api_tokens;
DROP TABLE ingest_credentials;
DROP TABLE rejected_events;
DROP TABLE project_relations;
DROP TABLE projects;
DROP TABLE sync_runs;
DROP TABLE resource_types;
DROP TABLE current_resources;
DROP TABLE events;
DROP FUNCTION tally_events_append_only();
