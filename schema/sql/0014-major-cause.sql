-- trapstat database, schema version 14: major faults by cause, and their time.
-- A major fault is counted at its completion as file (a file-backed mapping), anon (anonymous memory
-- read back from swap) or shmem (tmpfs and shared memory read back from swap), by the VMA of its
-- address. Rows from before, or from a kernel that cannot tell, have 0: replies say whether the
-- daemon counts them (GetStatus's source major_cause).

ALTER TABLE sample_raw ADD COLUMN f_major_file INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_raw ADD COLUMN f_major_anon INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_raw ADD COLUMN f_major_shmem INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_minute ADD COLUMN f_major_file INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_minute ADD COLUMN f_major_anon INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_minute ADD COLUMN f_major_shmem INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_hour ADD COLUMN f_major_file INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_hour ADD COLUMN f_major_anon INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_hour ADD COLUMN f_major_shmem INTEGER NOT NULL DEFAULT 0;

-- Top ranks by each as by the other Faults members (schema version 11).
ALTER TABLE process_total ADD COLUMN f_major_file INTEGER NOT NULL DEFAULT 0;
ALTER TABLE process_total ADD COLUMN f_major_anon INTEGER NOT NULL DEFAULT 0;
ALTER TABLE process_total ADD COLUMN f_major_shmem INTEGER NOT NULL DEFAULT 0;
CREATE INDEX process_total_by_major_file ON process_total (f_major_file, process_id) WHERE f_major_file > 0;
CREATE INDEX process_total_by_major_anon ON process_total (f_major_anon, process_id) WHERE f_major_anon > 0;
CREATE INDEX process_total_by_major_shmem ON process_total (f_major_shmem, process_id) WHERE f_major_shmem > 0;

-- With fault time on: the time of the timed major faults, by the same causes (a part of major_ns and
-- kernel_ns: a major fault taken in kernel mode has its time in kernel_ns and here).
ALTER TABLE fault_time_raw ADD COLUMN major_file_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fault_time_raw ADD COLUMN major_anon_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fault_time_raw ADD COLUMN major_shmem_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fault_time_minute ADD COLUMN major_file_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fault_time_minute ADD COLUMN major_anon_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fault_time_minute ADD COLUMN major_shmem_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fault_time_hour ADD COLUMN major_file_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fault_time_hour ADD COLUMN major_anon_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fault_time_hour ADD COLUMN major_shmem_ns INTEGER NOT NULL DEFAULT 0;
