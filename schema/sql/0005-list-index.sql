-- trapstat database, schema version 5: ListProcesses lists the newest processes first and stops
-- at its limit. Without this index every call read and sorted the whole process table.
CREATE INDEX process_by_first_seen ON process (first_seen_usec);
