-- trapstat database, schema version 11: each process's counts over its life, beside its rows in the
-- tiers. Top ranks the processes of a window by a sort column. Before this table it summed the window
-- of every process seen in it, so a Top over a day cost as much for 10000 processes that faulted once
-- as for 10000 busy ones. A process's count in any window is at most its total here (counts only grow;
-- retention and the size cap only remove rows). So Top walks the processes by total, largest first,
-- sums the window of those it meets, and stops at the first whose total is below the last of the rows
-- it keeps (daemon/store/store-top.c).
--
-- last_counted_usec is the last raw bucket the writer folded a count into: a process counted before a
-- window's first bucket has no rows in it. Each sort column has an index of the processes with a
-- non-zero total, the zero ones are not ranked through it (most processes never take a major fault,
-- a trap or, with fault time off, any time).
CREATE TABLE process_total (
        process_id INTEGER PRIMARY KEY REFERENCES process (id) ON DELETE CASCADE,
        last_counted_usec INTEGER NOT NULL,
        f_user INTEGER NOT NULL DEFAULT 0,
        f_kernel INTEGER NOT NULL DEFAULT 0,
        f_minor INTEGER NOT NULL DEFAULT 0,
        f_major INTEGER NOT NULL DEFAULT 0,
        f_read INTEGER NOT NULL DEFAULT 0,
        f_write INTEGER NOT NULL DEFAULT 0,
        f_exec INTEGER NOT NULL DEFAULT 0,
        f_protection INTEGER NOT NULL DEFAULT 0,
        traps INTEGER NOT NULL DEFAULT 0,
        time_ns INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX process_total_by_last_counted ON process_total (last_counted_usec);
CREATE INDEX process_total_by_user ON process_total (f_user, process_id) WHERE f_user > 0;
CREATE INDEX process_total_by_kernel ON process_total (f_kernel, process_id) WHERE f_kernel > 0;
CREATE INDEX process_total_by_minor ON process_total (f_minor, process_id) WHERE f_minor > 0;
CREATE INDEX process_total_by_major ON process_total (f_major, process_id) WHERE f_major > 0;
CREATE INDEX process_total_by_read ON process_total (f_read, process_id) WHERE f_read > 0;
CREATE INDEX process_total_by_write ON process_total (f_write, process_id) WHERE f_write > 0;
CREATE INDEX process_total_by_exec ON process_total (f_exec, process_id) WHERE f_exec > 0;
CREATE INDEX process_total_by_protection ON process_total (f_protection, process_id) WHERE f_protection > 0;
CREATE INDEX process_total_by_traps ON process_total (traps, process_id) WHERE traps > 0;
CREATE INDEX process_total_by_time_ns ON process_total (time_ns, process_id) WHERE time_ns > 0;

-- A user's share of the size cap (user_usage, schema version 7) counts their processes' totals: 200
-- bytes each (the row and its index entries, about 145 bytes each on a vacuumed table of 20000, more in a
-- b-tree that grows at random). A total is deleted with its process (ON DELETE CASCADE) and moves with
-- its process's uid.
CREATE TRIGGER usage_process_total_insert AFTER INSERT ON process_total BEGIN
        UPDATE user_usage SET bytes = bytes + 200 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_process_total_delete BEFORE DELETE ON process
        WHEN EXISTS (SELECT 1 FROM process_total WHERE process_id = OLD.id) BEGIN
        UPDATE user_usage SET bytes = bytes - 200 WHERE uid = OLD.uid;
END;
CREATE TRIGGER usage_process_total_update AFTER UPDATE OF uid ON process
        WHEN OLD.uid IS NOT NEW.uid AND EXISTS (SELECT 1 FROM process_total WHERE process_id = NEW.id) BEGIN
        UPDATE user_usage SET bytes = bytes - 200 WHERE uid = OLD.uid;
        INSERT INTO user_usage (uid, bytes) VALUES (NEW.uid, 200) ON CONFLICT (uid) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

-- A database from before: every tier's rows summed. The tiers overlap (a minute row holds its raw
-- rows again), so this is more than the process counted, never less, which is all the ranking needs;
-- and every row of a process starts at or before its last_seen_usec.
INSERT INTO process_total (process_id, last_counted_usec, f_user, f_kernel, f_minor, f_major, f_read, f_write,
                           f_exec, f_protection, traps, time_ns)
SELECT t.process_id, process.last_seen_usec, SUM(f_user), SUM(f_kernel), SUM(f_minor), SUM(f_major), SUM(f_read),
       SUM(f_write), SUM(f_exec), SUM(f_protection), SUM(traps), SUM(time_ns)
FROM (SELECT * FROM sample_raw UNION ALL SELECT * FROM sample_minute UNION ALL SELECT * FROM sample_hour) AS t
JOIN process ON process.id = t.process_id
GROUP BY t.process_id;
