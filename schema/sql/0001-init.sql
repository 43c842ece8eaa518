-- trapstat database, schema version 1.
-- Times are microseconds since the Unix epoch (*_usec) or nanoseconds since boot (start_time).

-- One row per process incarnation: (boot_id, pid, start_time) is the identity, so a reused
-- pid never shares a history with an earlier process.
CREATE TABLE process (
        id INTEGER PRIMARY KEY,
        boot_id TEXT NOT NULL,
        pid INTEGER NOT NULL,
        start_time INTEGER NOT NULL,
        comm TEXT NOT NULL,
        cmdline TEXT,
        uid INTEGER NOT NULL,
        unit TEXT,
        first_seen_usec INTEGER NOT NULL,
        last_seen_usec INTEGER NOT NULL,
        exited INTEGER NOT NULL DEFAULT 0,
        UNIQUE (boot_id, pid, start_time)
);
CREATE INDEX process_by_pid ON process (pid, start_time);
CREATE INDEX process_by_last_seen ON process (last_seen_usec);

-- Raw tier: counts per process per 10 s bucket (time_usec is the bucket start).
-- Only non-zero deltas are stored; a tick's delta is added to its bucket.
CREATE TABLE sample_raw (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        f_user INTEGER NOT NULL DEFAULT 0,
        f_kernel INTEGER NOT NULL DEFAULT 0,
        f_minor INTEGER NOT NULL DEFAULT 0,
        f_major INTEGER NOT NULL DEFAULT 0,
        f_read INTEGER NOT NULL DEFAULT 0,
        f_write INTEGER NOT NULL DEFAULT 0,
        f_exec INTEGER NOT NULL DEFAULT 0,
        f_protection INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX sample_raw_by_time ON sample_raw (time_usec);
