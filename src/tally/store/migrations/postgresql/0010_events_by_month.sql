-- events becomes a table RANGE-partitioned by month (UTC) on timestamp, in place and in this one
-- transaction: the rows move into a partition per month present in the data from 2000-01 up to two
-- months ahead of now (and one for each of the current month and the next two); instants outside that
-- span land in events_default. The indexes, the primary key (it carries the partition key, so ON
-- CONFLICT deduplication works per partition) and the append-only trigger are declared on the parent,
-- so every partition gets them. The daemon and `tally migrate`
-- create the coming months ahead and split a month out of the default partition (store/_partitions.py);
-- retention detaches closed months after archiving their usage in usage_archive (store/_retention.py).
-- migrate:up
ALTER TABLE events RENAME TO events_unpartitioned;
ALTER INDEX events_pkey RENAME TO events_unpartitioned_pkey;
ALTER INDEX events_resource_idx RENAME TO events_unpartitioned_resource_idx;
ALTER INDEX events_project_idx RENAME TO events_unpartitioned_project_idx;
ALTER INDEX events_type_idx RENAME TO events_unpartitioned_type_idx;
ALTER INDEX events_timestamp_idx RENAME TO events_unpartitioned_timestamp_idx;
ALTER INDEX events_scope_idx RENAME TO events_unpartitioned_scope_idx;
ALTER INDEX events_received_idx RENAME TO events_unpartitioned_received_idx;
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
) PARTITION BY RANGE (timestamp);
CREATE TABLE events_default PARTITION OF events DEFAULT;
DO $$
DECLARE
    month timestamptz;
BEGIN
    FOR month IN
        SELECT DISTINCT date_trunc('month', timestamp, 'UTC') FROM events_unpartitioned
        WHERE timestamp >= '2000-01-01T00:00:00Z'
          AND timestamp < date_trunc('month', now(), 'UTC') + interval '3 months'
        UNION
        SELECT date_trunc('month', now(), 'UTC') + n * interval '1 month' FROM generate_series(0, 2) AS n
    LOOP
        EXECUTE format(
            'CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
            'events_p' || to_char(month AT TIME ZONE 'UTC', 'YYYYMM'),
            to_char(month AT TIME ZONE 'UTC', 'YYYY-MM-DD"T00:00:00Z"'),
            to_char((month + interval '1 month') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T00:00:00Z"')
        );
    END LOOP;
END
$$;
INSERT INTO events SELECT * FROM events_unpartitioned;
DROP TABLE events_unpartitioned;
CREATE INDEX events_resource_idx ON events (cloud, resource_type, resource_id, timestamp);
CREATE INDEX events_project_idx ON events (project_id, timestamp);
CREATE INDEX events_type_idx ON events (event_type, timestamp);
CREATE INDEX events_timestamp_idx ON events (timestamp, event_id);
CREATE INDEX events_scope_idx ON events (platform, cloud, timestamp);
CREATE INDEX events_received_idx ON events (received_at);
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION tally_events_append_only();
ANALYZE events;

-- The usage of each retired month, per resource and (project, state), as the usage export answered it
-- before the month's partition was detached: quantities are member-microseconds as decimal text.
CREATE TABLE usage_archive (
    month DATE NOT NULL,
    cloud TEXT NOT NULL,
    platform TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    state TEXT NOT NULL,
    presence_us BIGINT NOT NULL,
    quantities JSONB NOT NULL DEFAULT '{}',
    creates INTEGER NOT NULL,
    deletes INTEGER NOT NULL,
    received_at TIMESTAMPTZ,
    PRIMARY KEY (month, cloud, resource_type, resource_id, project_id, state)
);
-- One row per month retention took out of events: when, how many events and snapshots, and whether
-- the partition was dropped or left detached (as the table events_pYYYYMM).
CREATE TABLE retired_months (
    month DATE PRIMARY KEY,
    retired_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    events BIGINT NOT NULL,
    snapshots BIGINT NOT NULL,
    usage_lines BIGINT NOT NULL,
    dropped BOOLEAN NOT NULL
);
-- migrate:down
DROP TABLE retired_months;
DROP TABLE usage_archive;
ALTER TABLE events RENAME TO events_partitioned;
ALTER INDEX events_pkey RENAME TO events_partitioned_pkey;
ALTER INDEX events_resource_idx RENAME TO events_partitioned_resource_idx;
ALTER INDEX events_project_idx RENAME TO events_partitioned_project_idx;
ALTER INDEX events_type_idx RENAME TO events_partitioned_type_idx;
ALTER INDEX events_timestamp_idx RENAME TO events_partitioned_timestamp_idx;
ALTER INDEX events_scope_idx RENAME TO events_partitioned_scope_idx;
ALTER INDEX events_received_idx RENAME TO events_partitioned_received_idx;
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
INSERT INTO events SELECT * FROM events_partitioned;
-- Dropping the parent drops its attached partitions; detached ones stay as the tables they are.
DROP TABLE events_partitioned;
CREATE INDEX events_resource_idx ON events (cloud, resource_type, resource_id, timestamp);
CREATE INDEX events_project_idx ON events (project_id, timestamp);
CREATE INDEX events_type_idx ON events (event_type, timestamp);
CREATE INDEX events_timestamp_idx ON events (timestamp, event_id);
CREATE INDEX events_scope_idx ON events (platform, cloud, timestamp);
CREATE INDEX events_received_idx ON events (received_at);
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION tally_events_append_only();
