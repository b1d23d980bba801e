-- The key of each cloud's sync lock: a number of its own per cloud name, so that no two clouds share a
-- lock (a hash of the name could). The lock is the session advisory lock (this table's oid, key); the
-- oid keeps the clouds of two Tally schemas in one database apart. A row is added on a cloud's first
-- sync and never changes.
-- migrate:up
CREATE TABLE sync_lock_keys (
    cloud TEXT PRIMARY KEY,
    key INTEGER GENERATED ALWAYS AS IDENTITY UNIQUE
);
-- migrate:down
DROP TABLE sync_lock_keys;
