-- PostgreSQL's 0010 partitions events by month and adds the retention archive; SQLite keeps events in
-- one table and has no retention (an embedded store is one process's, sized for it). This step keeps
-- the two chains at the same numbers, so that one version names one schema.
-- migrate:up
SELECT 1;
-- migrate:down
SELECT 1;
