-- trapstat database, schema version 10: the minute and hour tiers without an index by time.
-- On a database of 1000 processes over 14 days (bench/store-bench) the minute tier's index by
-- time took 58 of its 160 MiB: 21 bytes a row beside the row's 37. Everything that reads or deletes
-- those tiers does so a process at a time, by the primary key (process_id, time_usec): History,
-- Top and UnitHistory always did; the roll-up into the hour tier reads the processes seen since the
-- start of what it rolls (a process's rows all start before its last_seen_usec), retention the
-- processes first seen before its cutoff, and the size cap the processes of one user
-- (daemon/store/store-kind.c, daemon/store/store-share.c). The raw tier keeps its index: its roll-up and
-- retention run every few seconds, and it holds a day.
DROP INDEX sample_minute_by_time;
DROP INDEX sample_hour_by_time;
DROP INDEX fault_time_minute_by_time;
DROP INDEX fault_time_hour_by_time;
