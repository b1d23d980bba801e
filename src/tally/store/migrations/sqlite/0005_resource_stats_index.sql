-- Grouped counts and listings of the live part of the projection (stats of resources, the default
-- status=active listing, the tally_current_resources gauge). Partial, so that a lookup by key never
-- mistakes it for the primary key: only a query that asks for live rows can use it.
-- migrate:up
CREATE INDEX current_resources_live_idx ON current_resources (cloud, resource_type, state, platform)
    WHERE deleted_at IS NULL;
-- migrate:down
DROP INDEX current_resources_live_idx;
