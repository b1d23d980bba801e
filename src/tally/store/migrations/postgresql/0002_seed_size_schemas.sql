-- The size schemas of the four resource types every OpenStack cloud has (JSON Schema 2020-12).
-- An operator's existing row wins (ON CONFLICT DO NOTHING); the rollback removes a row only while it
-- still holds exactly the seeded document.
-- migrate:up
INSERT INTO resource_types (platform, resource_type, size_schema)
VALUES ('openstack', 'instance', '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"disk_gb":{"minimum":0,"type":"number"},"flavor":{"type":"string"},"ram_gb":{"exclusiveMinimum":0,"type":"number"},"vcpus":{"minimum":1,"type":"integer"}},"required":["vcpus","ram_gb","disk_gb","flavor"],"type":"object"}'::jsonb)
ON CONFLICT (platform, resource_type) DO NOTHING;
INSERT INTO resource_types (platform, resource_type, size_schema)
VALUES ('openstack', 'volume', '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"size_gb":{"exclusiveMinimum":0,"type":"number"},"type":{"type":"string"}},"required":["size_gb","type"],"type":"object"}'::jsonb)
ON CONFLICT (platform, resource_type) DO NOTHING;
INSERT INTO resource_types (platform, resource_type, size_schema)
VALUES ('openstack', 'floating_ip', '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"ip_version":{"enum":[4,6]}},"required":["ip_version"],"type":"object"}'::jsonb)
ON CONFLICT (platform, resource_type) DO NOTHING;
INSERT INTO resource_types (platform, resource_type, size_schema)
VALUES ('openstack', 'image', '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"size_gb":{"minimum":0,"type":"number"}},"required":["size_gb"],"type":"object"}'::jsonb)
ON CONFLICT (platform, resource_type) DO NOTHING;
-- migrate:down
DELETE FROM resource_types
WHERE platform = 'openstack' AND resource_type = 'instance'
  AND size_schema = '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"disk_gb":{"minimum":0,"type":"number"},"flavor":{"type":"string"},"ram_gb":{"exclusiveMinimum":0,"type":"number"},"vcpus":{"minimum":1,"type":"integer"}},"required":["vcpus","ram_gb","disk_gb","flavor"],"type":"object"}'::jsonb;
DELETE FROM resource_types
WHERE platform = 'openstack' AND resource_type = 'volume'
  AND size_schema = '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"size_gb":{"exclusiveMinimum":0,"type":"number"},"type":{"type":"string"}},"required":["size_gb","type"],"type":"object"}'::jsonb;
DELETE FROM resource_types
WHERE platform = 'openstack' AND resource_type = 'floating_ip'
  AND size_schema = '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"ip_version":{"enum":[4,6]}},"required":["ip_version"],"type":"object"}'::jsonb;
DELETE FROM resource_types
WHERE platform = 'openstack' AND resource_type = 'image'
  AND size_schema = '{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"size_gb":{"minimum":0,"type":"number"}},"required":["size_gb"],"type":"object"}'::jsonb;
