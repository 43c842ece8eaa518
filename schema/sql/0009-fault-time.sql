-- trapstat database, schema version 9: how long page faults took.
-- Per process and interval: nanoseconds spent in user-mode minor and major faults and in
-- kernel-mode faults, the longest single fault (merged by MAX when intervals merge, not summed),
-- and the timed faults by duration in 24 buckets h0..h23 (h0 under 1 us, h<i> from 2^(i-1) us to
-- under 2^i us, h23 from 2^22 us up; common/fault-time.h). Only where a fault was timed.

-- All fault time of the interval (minor_ns + major_ns + kernel_ns), so that Top can sort by it.
ALTER TABLE sample_raw ADD COLUMN time_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_minute ADD COLUMN time_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_hour ADD COLUMN time_ns INTEGER NOT NULL DEFAULT 0;

-- The time the sampled faults of a site took (the faults' sites are sampled: count is the samples).
ALTER TABLE site_raw ADD COLUMN time_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE site_minute ADD COLUMN time_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE site_hour ADD COLUMN time_ns INTEGER NOT NULL DEFAULT 0;

CREATE TABLE fault_time_raw (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        minor_ns INTEGER NOT NULL DEFAULT 0,
        major_ns INTEGER NOT NULL DEFAULT 0,
        kernel_ns INTEGER NOT NULL DEFAULT 0,
        max_ns INTEGER NOT NULL DEFAULT 0,
        h0 INTEGER NOT NULL DEFAULT 0,
        h1 INTEGER NOT NULL DEFAULT 0,
        h2 INTEGER NOT NULL DEFAULT 0,
        h3 INTEGER NOT NULL DEFAULT 0,
        h4 INTEGER NOT NULL DEFAULT 0,
        h5 INTEGER NOT NULL DEFAULT 0,
        h6 INTEGER NOT NULL DEFAULT 0,
        h7 INTEGER NOT NULL DEFAULT 0,
        h8 INTEGER NOT NULL DEFAULT 0,
        h9 INTEGER NOT NULL DEFAULT 0,
        h10 INTEGER NOT NULL DEFAULT 0,
        h11 INTEGER NOT NULL DEFAULT 0,
        h12 INTEGER NOT NULL DEFAULT 0,
        h13 INTEGER NOT NULL DEFAULT 0,
        h14 INTEGER NOT NULL DEFAULT 0,
        h15 INTEGER NOT NULL DEFAULT 0,
        h16 INTEGER NOT NULL DEFAULT 0,
        h17 INTEGER NOT NULL DEFAULT 0,
        h18 INTEGER NOT NULL DEFAULT 0,
        h19 INTEGER NOT NULL DEFAULT 0,
        h20 INTEGER NOT NULL DEFAULT 0,
        h21 INTEGER NOT NULL DEFAULT 0,
        h22 INTEGER NOT NULL DEFAULT 0,
        h23 INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX fault_time_raw_by_time ON fault_time_raw (time_usec);

CREATE TABLE fault_time_minute (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        minor_ns INTEGER NOT NULL DEFAULT 0,
        major_ns INTEGER NOT NULL DEFAULT 0,
        kernel_ns INTEGER NOT NULL DEFAULT 0,
        max_ns INTEGER NOT NULL DEFAULT 0,
        h0 INTEGER NOT NULL DEFAULT 0,
        h1 INTEGER NOT NULL DEFAULT 0,
        h2 INTEGER NOT NULL DEFAULT 0,
        h3 INTEGER NOT NULL DEFAULT 0,
        h4 INTEGER NOT NULL DEFAULT 0,
        h5 INTEGER NOT NULL DEFAULT 0,
        h6 INTEGER NOT NULL DEFAULT 0,
        h7 INTEGER NOT NULL DEFAULT 0,
        h8 INTEGER NOT NULL DEFAULT 0,
        h9 INTEGER NOT NULL DEFAULT 0,
        h10 INTEGER NOT NULL DEFAULT 0,
        h11 INTEGER NOT NULL DEFAULT 0,
        h12 INTEGER NOT NULL DEFAULT 0,
        h13 INTEGER NOT NULL DEFAULT 0,
        h14 INTEGER NOT NULL DEFAULT 0,
        h15 INTEGER NOT NULL DEFAULT 0,
        h16 INTEGER NOT NULL DEFAULT 0,
        h17 INTEGER NOT NULL DEFAULT 0,
        h18 INTEGER NOT NULL DEFAULT 0,
        h19 INTEGER NOT NULL DEFAULT 0,
        h20 INTEGER NOT NULL DEFAULT 0,
        h21 INTEGER NOT NULL DEFAULT 0,
        h22 INTEGER NOT NULL DEFAULT 0,
        h23 INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX fault_time_minute_by_time ON fault_time_minute (time_usec);

CREATE TABLE fault_time_hour (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        minor_ns INTEGER NOT NULL DEFAULT 0,
        major_ns INTEGER NOT NULL DEFAULT 0,
        kernel_ns INTEGER NOT NULL DEFAULT 0,
        max_ns INTEGER NOT NULL DEFAULT 0,
        h0 INTEGER NOT NULL DEFAULT 0,
        h1 INTEGER NOT NULL DEFAULT 0,
        h2 INTEGER NOT NULL DEFAULT 0,
        h3 INTEGER NOT NULL DEFAULT 0,
        h4 INTEGER NOT NULL DEFAULT 0,
        h5 INTEGER NOT NULL DEFAULT 0,
        h6 INTEGER NOT NULL DEFAULT 0,
        h7 INTEGER NOT NULL DEFAULT 0,
        h8 INTEGER NOT NULL DEFAULT 0,
        h9 INTEGER NOT NULL DEFAULT 0,
        h10 INTEGER NOT NULL DEFAULT 0,
        h11 INTEGER NOT NULL DEFAULT 0,
        h12 INTEGER NOT NULL DEFAULT 0,
        h13 INTEGER NOT NULL DEFAULT 0,
        h14 INTEGER NOT NULL DEFAULT 0,
        h15 INTEGER NOT NULL DEFAULT 0,
        h16 INTEGER NOT NULL DEFAULT 0,
        h17 INTEGER NOT NULL DEFAULT 0,
        h18 INTEGER NOT NULL DEFAULT 0,
        h19 INTEGER NOT NULL DEFAULT 0,
        h20 INTEGER NOT NULL DEFAULT 0,
        h21 INTEGER NOT NULL DEFAULT 0,
        h22 INTEGER NOT NULL DEFAULT 0,
        h23 INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX fault_time_hour_by_time ON fault_time_hour (time_usec);

-- Each user's share of the size cap (0007-shares.sql) counts these rows too: 96 bytes each (on a
-- store-bench database a row and its time index entry take 72 bytes with two buckets in use).
CREATE TRIGGER usage_fault_time_raw_insert AFTER INSERT ON fault_time_raw BEGIN
        UPDATE user_usage SET bytes = bytes + 96 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_fault_time_raw_delete AFTER DELETE ON fault_time_raw BEGIN
        UPDATE user_usage SET bytes = bytes - 96 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_fault_time_minute_insert AFTER INSERT ON fault_time_minute BEGIN
        UPDATE user_usage SET bytes = bytes + 96 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_fault_time_minute_delete AFTER DELETE ON fault_time_minute BEGIN
        UPDATE user_usage SET bytes = bytes - 96 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_fault_time_hour_insert AFTER INSERT ON fault_time_hour BEGIN
        UPDATE user_usage SET bytes = bytes + 96 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_fault_time_hour_delete AFTER DELETE ON fault_time_hour BEGIN
        UPDATE user_usage SET bytes = bytes - 96 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
