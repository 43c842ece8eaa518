-- trapstat database, schema version 12: a fold of the pending ticks that takes several transactions,
-- without packing what is left into new rows after each. Ticks are folded a minute at a time, process
-- by process, each process's buckets and then its total (daemon/store/store-pending.c). While a fold
-- is under way this row says how far it got: the samples of the ticks before before_usec of the
-- processes up to through_id are in their raw rows and totals already, and whoever reads the pending
-- rows skips them. At most one row; none when no fold is under way.
CREATE TABLE pending_fold (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        before_usec INTEGER NOT NULL,
        through_id INTEGER NOT NULL
);
