-- trapstat database, schema version 15: why a process waited, as the kernel's delay accounting says.
-- Per process and interval: what its delay accounting (task_struct.delays, kept while
-- kernel.task_delayacct is 1) grew by, nanoseconds and waits by cause: swap-in, thrashing, direct
-- reclaim (freepages), direct compaction, block I/O. Only where it grew. Rows from before, or from
-- a time the kernel kept none, do not exist: replies say whether the daemon reads it now
-- (GetStatus's source delay_accounting).

-- All time waited on memory in the interval (swapin_ns + thrashing_ns + reclaim_ns + compact_ns),
-- so that Top can sort by it.
ALTER TABLE sample_raw ADD COLUMN stall_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_minute ADD COLUMN stall_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_hour ADD COLUMN stall_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE process_total ADD COLUMN stall_ns INTEGER NOT NULL DEFAULT 0;
CREATE INDEX process_total_by_stall ON process_total (stall_ns, process_id) WHERE stall_ns > 0;

CREATE TABLE stall_raw (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        swapin_ns INTEGER NOT NULL DEFAULT 0,
        swapin_count INTEGER NOT NULL DEFAULT 0,
        thrashing_ns INTEGER NOT NULL DEFAULT 0,
        thrashing_count INTEGER NOT NULL DEFAULT 0,
        reclaim_ns INTEGER NOT NULL DEFAULT 0,
        reclaim_count INTEGER NOT NULL DEFAULT 0,
        compact_ns INTEGER NOT NULL DEFAULT 0,
        compact_count INTEGER NOT NULL DEFAULT 0,
        blkio_ns INTEGER NOT NULL DEFAULT 0,
        blkio_count INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX stall_raw_by_time ON stall_raw (time_usec);

CREATE TABLE stall_minute (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        swapin_ns INTEGER NOT NULL DEFAULT 0,
        swapin_count INTEGER NOT NULL DEFAULT 0,
        thrashing_ns INTEGER NOT NULL DEFAULT 0,
        thrashing_count INTEGER NOT NULL DEFAULT 0,
        reclaim_ns INTEGER NOT NULL DEFAULT 0,
        reclaim_count INTEGER NOT NULL DEFAULT 0,
        compact_ns INTEGER NOT NULL DEFAULT 0,
        compact_count INTEGER NOT NULL DEFAULT 0,
        blkio_ns INTEGER NOT NULL DEFAULT 0,
        blkio_count INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX stall_minute_by_time ON stall_minute (time_usec);

CREATE TABLE stall_hour (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        swapin_ns INTEGER NOT NULL DEFAULT 0,
        swapin_count INTEGER NOT NULL DEFAULT 0,
        thrashing_ns INTEGER NOT NULL DEFAULT 0,
        thrashing_count INTEGER NOT NULL DEFAULT 0,
        reclaim_ns INTEGER NOT NULL DEFAULT 0,
        reclaim_count INTEGER NOT NULL DEFAULT 0,
        compact_ns INTEGER NOT NULL DEFAULT 0,
        compact_count INTEGER NOT NULL DEFAULT 0,
        blkio_ns INTEGER NOT NULL DEFAULT 0,
        blkio_count INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX stall_hour_by_time ON stall_hour (time_usec);

-- Each user's share of the size cap (0007-shares.sql) counts these rows too, as the fault time
-- rows (0009-fault-time.sql): 64 bytes each (ten small integers, the key and its time index entry).
CREATE TRIGGER usage_stall_raw_insert AFTER INSERT ON stall_raw BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_stall_raw_delete AFTER DELETE ON stall_raw BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_stall_minute_insert AFTER INSERT ON stall_minute BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_stall_minute_delete AFTER DELETE ON stall_minute BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_stall_hour_insert AFTER INSERT ON stall_hour BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_stall_hour_delete AFTER DELETE ON stall_hour BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
