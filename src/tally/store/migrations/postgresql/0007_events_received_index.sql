-- Events by arrival (what came in during an incident, replays of a time window).
-- migrate:up
CREATE INDEX events_received_idx ON events (received_at);
-- migrate:down
DROP INDEX events_received_idx;
