-- PostgreSQL's 0008 (sync_lock_keys) has no SQLite counterpart: SQLite's sync lock is a lease row
-- (0001). This step keeps the two chains at the same numbers, so that one version names one schema.
-- migrate:up
SELECT 1;
-- migrate:down
SELECT 1;
