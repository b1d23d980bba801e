-- Billing periods: a cloud's month closed with the price list it was rated by, and its rated lines
-- frozen as of the close (the JSON of each line, as the rated export writes it). Corrections found
-- later are lines of their own (kind 'correction', with their reason and sync run), never an edit.
-- Nothing of a period or its lines is updated or deleted, except the instant a correction line was
-- delivered in an export (docs/invoicing.md).
-- migrate:up
CREATE TABLE billing_periods (
    cloud TEXT NOT NULL,
    period_start TEXT NOT NULL,
    period_end TEXT NOT NULL,
    price_list TEXT NOT NULL,
    closed_at TEXT NOT NULL,
    PRIMARY KEY (cloud, period_start)
);
CREATE TABLE period_lines (
    cloud TEXT NOT NULL,
    period_start TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    line TEXT NOT NULL,
    reason TEXT,
    sync_run TEXT,
    recorded_at TEXT NOT NULL,
    delivered_at TEXT,
    PRIMARY KEY (cloud, period_start, seq),
    FOREIGN KEY (cloud, period_start) REFERENCES billing_periods (cloud, period_start)
);
CREATE TRIGGER billing_periods_no_update BEFORE UPDATE ON billing_periods
BEGIN SELECT RAISE(ABORT, 'a closed period is frozen'); END;
CREATE TRIGGER billing_periods_no_delete BEFORE DELETE ON billing_periods
BEGIN SELECT RAISE(ABORT, 'a closed period is frozen'); END;
CREATE TRIGGER period_lines_no_update
BEFORE UPDATE OF cloud, period_start, seq, kind, line, reason, sync_run, recorded_at ON period_lines
BEGIN SELECT RAISE(ABORT, 'the lines of a closed period are frozen'); END;
CREATE TRIGGER period_lines_delivered_once BEFORE UPDATE OF delivered_at ON period_lines
WHEN OLD.delivered_at IS NOT NULL OR OLD.kind <> 'correction'
BEGIN SELECT RAISE(ABORT, 'the lines of a closed period are frozen: a correction line is delivered once'); END;
CREATE TRIGGER period_lines_no_delete BEFORE DELETE ON period_lines
BEGIN SELECT RAISE(ABORT, 'the lines of a closed period are frozen'); END;
-- migrate:down
DROP TABLE period_lines;
DROP TABLE billing_periods;
