-- trapstat database, schema version 2: CPU traps.
-- Kernel-generated fault signals, counted by the CPU exception vector that raised them
-- (trap_raw) and by signal number and si_code (signal_raw), in the raw tier's 10 s buckets.

-- Total traps of the bucket, so that Top can sort by them and finds processes that trapped
-- without faulting.
ALTER TABLE sample_raw ADD COLUMN traps INTEGER NOT NULL DEFAULT 0;

CREATE TABLE trap_raw (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        vector INTEGER NOT NULL, -- x86 exception vector (0 #DE ... 19 #XM); 32: not known
        count INTEGER NOT NULL,
        PRIMARY KEY (process_id, time_usec, vector)
) WITHOUT ROWID;

CREATE TABLE signal_raw (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        signo INTEGER NOT NULL,   -- SIGILL 4, SIGTRAP 5, SIGBUS 7, SIGFPE 8, SIGSEGV 11
        si_code INTEGER NOT NULL, -- as in siginfo_t (SI_KERNEL 128); -1: any other
        count INTEGER NOT NULL,
        PRIMARY KEY (process_id, time_usec, signo, si_code)
) WITHOUT ROWID;
