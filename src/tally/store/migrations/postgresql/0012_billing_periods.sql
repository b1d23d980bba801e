-- Billing periods: a cloud's month closed with the price list it was rated by, and its rated lines
-- frozen as of the close (the JSON of each line, as the rated export writes it). Corrections found
-- later are lines of their own (kind 'correction', with their reason and sync run), never an edit.
-- Nothing of a period or its lines is updated or deleted, except the instant a correction line was
-- delivered in an export (docs/invoicing.md).
-- migrate:up
CREATE TABLE billing_periods (
    cloud TEXT NOT NULL,
    period_start TIMESTAMPTZ NOT NULL,
    period_end TIMESTAMPTZ NOT NULL,
    price_list TEXT NOT NULL,
    closed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (cloud, period_start)
);
CREATE TABLE period_lines (
    cloud TEXT NOT NULL,
    period_start TIMESTAMPTZ NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    line JSONB NOT NULL,
    reason TEXT,
    sync_run TEXT,
    recorded_at TIMESTAMPTZ NOT NULL,
    delivered_at TIMESTAMPTZ,
    PRIMARY KEY (cloud, period_start, seq),
    FOREIGN KEY (cloud, period_start) REFERENCES billing_periods (cloud, period_start)
);
CREATE FUNCTION tally_period_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'period_lines' AND TG_OP = 'UPDATE' AND OLD.kind = 'correction'
       AND OLD.delivered_at IS NULL AND NEW.delivered_at IS NOT NULL
       AND (NEW.cloud, NEW.period_start, NEW.seq, NEW.kind, NEW.line, NEW.reason, NEW.sync_run, NEW.recorded_at)
           IS NOT DISTINCT FROM
           (OLD.cloud, OLD.period_start, OLD.seq, OLD.kind, OLD.line, OLD.reason, OLD.sync_run, OLD.recorded_at)
    THEN
        RETURN NEW;  -- a correction line delivered, once
    END IF;
    RAISE EXCEPTION 'the lines of a closed period are frozen: a correction line is delivered once, nothing else changes (%)', TG_TABLE_NAME;
END;
$$;
CREATE TRIGGER billing_periods_frozen BEFORE UPDATE OR DELETE ON billing_periods
    FOR EACH ROW EXECUTE FUNCTION tally_period_frozen();
CREATE TRIGGER period_lines_frozen BEFORE UPDATE OR DELETE ON period_lines
    FOR EACH ROW EXECUTE FUNCTION tally_period_frozen();
-- migrate:down
DROP TABLE period_lines;
DROP TABLE billing_periods;
DROP FUNCTION tally_period_frozen();
