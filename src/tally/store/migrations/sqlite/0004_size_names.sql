-- Size names: under `member` of a `resource_type` size in `cloud`, the string `value` means `name`
-- (cinder notifications carry a volume type id, listings the name). Rewritten per cloud by each sync.
-- migrate:up
CREATE TABLE size_names (
    cloud TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    member TEXT NOT NULL,
    value TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (cloud, resource_type, member, value)
);
-- migrate:down
DROP TABLE size_names;
