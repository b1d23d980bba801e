-- The size schema of openstack/loadbalancer (listener and pool counts, booked by the sync), with the
-- marker "x-tally-seed": 6. An operator's existing row wins and the migration still succeeds; rolling
-- back below 6 deletes the row only while it still holds exactly this document, marker included
-- (seed 000, "Why adapter settings are checked on the first run").
-- migrate:up
INSERT INTO resource_types (platform, resource_type, size_schema)
VALUES ('openstack', 'loadbalancer', '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"listeners":{"minimum":0,"type":"integer"},"pools":{"minimum":0,"type":"integer"}},"required":["listeners","pools"],"type":"object","x-tally-seed":6}'::jsonb)
ON CONFLICT (platform, resource_type) DO NOTHING;
-- migrate:down
DELETE FROM resource_types
WHERE platform = 'openstack' AND resource_type = 'loadbalancer'
  AND size_schema = '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"listeners":{"minimum":0,"type":"integer"},"pools":{"minimum":0,"type":"integer"}},"required":["listeners","pools"],"type":"object","x-tally-seed":6}'::jsonb;
