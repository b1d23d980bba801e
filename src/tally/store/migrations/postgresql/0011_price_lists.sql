-- Price lists: the versions of each named list, each in force from effective_from until the next
-- one's instant, as the canonical document tally.rating checked (amounts as decimal texts). A
-- version in force is never edited: the store refuses the load that would (docs/invoicing.md).
-- migrate:up
CREATE TABLE price_list_versions (
    name TEXT NOT NULL,
    effective_from TIMESTAMPTZ NOT NULL,
    currency TEXT NOT NULL,
    document JSONB NOT NULL,
    loaded_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (name, effective_from)
);
-- migrate:down
DROP TABLE price_list_versions;
