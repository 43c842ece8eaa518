-- trapstat database, schema version 3: coarser tiers and their bookkeeping.
-- sample_minute / sample_hour (and their trap_ and signal_ twins) hold the same columns as the
-- raw tier, summed over 1 min and 1 h; time_usec is the interval start.

CREATE TABLE sample_minute (
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
        traps INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX sample_minute_by_time ON sample_minute (time_usec);

CREATE TABLE sample_hour (
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
        traps INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (process_id, time_usec)
) WITHOUT ROWID;
CREATE INDEX sample_hour_by_time ON sample_hour (time_usec);

CREATE TABLE trap_minute (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        vector INTEGER NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (process_id, time_usec, vector)
) WITHOUT ROWID;
CREATE TABLE trap_hour (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        vector INTEGER NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (process_id, time_usec, vector)
) WITHOUT ROWID;
CREATE TABLE signal_minute (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        signo INTEGER NOT NULL,
        si_code INTEGER NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (process_id, time_usec, signo, si_code)
) WITHOUT ROWID;
CREATE TABLE signal_hour (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        signo INTEGER NOT NULL,
        si_code INTEGER NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (process_id, time_usec, signo, si_code)
) WITHOUT ROWID;

-- Per tier: everything before rolled_until_usec has been summed into it from the next finer
-- tier, and retention has deleted what is before kept_from_usec. Retention moves kept_from
-- before it deletes, and never past the next coarser tier's rolled_until, so every instant is
-- in some tier and a query reads each from exactly one (daemon/store/tier-util.c).
CREATE TABLE tier (
        name TEXT PRIMARY KEY, -- 'raw', 'minute', 'hour'
        rolled_until_usec INTEGER NOT NULL,
        kept_from_usec INTEGER NOT NULL
);
INSERT INTO tier (name, rolled_until_usec, kept_from_usec) VALUES
        ('raw', 9223372036854775807, 0), ('minute', 0, 0), ('hour', 0, 0);
