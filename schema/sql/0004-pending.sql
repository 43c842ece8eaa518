-- trapstat database, schema version 4: ticks not yet added to the raw tier.
-- One row per tick: the non-zero fault deltas of every process that tick, packed (see
-- daemon/store/store.c, "pending ticks"), committed with the tick. They are added to sample_raw's
-- 10 s buckets in one transaction when a tick falls into a later bucket, and before anything
-- reads the samples: a tick then writes one row, not one per process.
CREATE TABLE sample_pending (
        id INTEGER PRIMARY KEY,
        time_usec INTEGER NOT NULL, -- the tick
        data BLOB NOT NULL
);
