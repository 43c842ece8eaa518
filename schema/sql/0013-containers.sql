-- trapstat database, schema version 13: where a process runs, as a container sees it. Each process
-- keeps its innermost pid namespace (pid_ns, the namespace's inode number), that namespace's level
-- (pidns_level, 0 for the initial one) and its pid there (ns_pid),
-- and its container as its cgroup names it (runtime, id, name, Kubernetes pod, and the user whose
-- service manager holds a rootless one); all NULL when not known or in none. process_pidns lists
-- every pid namespace below the initial one the process is in, with its pid there: a client inside a
-- namespace sees the processes listed under it, by those pids.
ALTER TABLE process ADD COLUMN ns_pid INTEGER;
ALTER TABLE process ADD COLUMN pid_ns INTEGER;
ALTER TABLE process ADD COLUMN pidns_level INTEGER;
ALTER TABLE process ADD COLUMN container_runtime TEXT;
ALTER TABLE process ADD COLUMN container_id TEXT;
ALTER TABLE process ADD COLUMN container_name TEXT;
ALTER TABLE process ADD COLUMN container_pod TEXT;
ALTER TABLE process ADD COLUMN container_user INTEGER;

CREATE TABLE process_pidns (
        ns INTEGER NOT NULL,
        pid INTEGER NOT NULL,
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        PRIMARY KEY (ns, pid, process_id)
) WITHOUT ROWID;
CREATE INDEX process_pidns_by_process ON process_pidns (process_id);

-- The shares (0007): a process row's cost now includes its container's text and its namespace rows
-- (32 bytes each, as a trap row; a process has one for each level below the initial one, at most 3).
DROP TRIGGER usage_process_insert;
DROP TRIGGER usage_process_delete;
DROP TRIGGER usage_process_update;
CREATE TRIGGER usage_process_insert AFTER INSERT ON process BEGIN
        INSERT INTO user_usage (uid, bytes) VALUES (NEW.uid, 200 + coalesce(length(CAST(NEW.cmdline AS BLOB)), 0)
                        + coalesce(length(CAST(NEW.unit AS BLOB)), 0)
                        + coalesce(length(CAST(NEW.container_id AS BLOB)), 0)
                        + coalesce(length(CAST(NEW.container_name AS BLOB)), 0)
                        + 32 * min(coalesce(NEW.pidns_level, 0), 3))
                ON CONFLICT (uid) DO UPDATE SET bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER usage_process_delete AFTER DELETE ON process BEGIN
        UPDATE user_usage SET bytes = bytes - (200 + coalesce(length(CAST(OLD.cmdline AS BLOB)), 0)
                        + coalesce(length(CAST(OLD.unit AS BLOB)), 0)
                        + coalesce(length(CAST(OLD.container_id AS BLOB)), 0)
                        + coalesce(length(CAST(OLD.container_name AS BLOB)), 0)
                        + 32 * min(coalesce(OLD.pidns_level, 0), 3))
                WHERE uid = OLD.uid;
END;
CREATE TRIGGER usage_process_update
        AFTER UPDATE OF uid, cmdline, unit, container_id, container_name, pidns_level ON process
        WHEN OLD.uid IS NOT NEW.uid OR OLD.cmdline IS NOT NEW.cmdline OR OLD.unit IS NOT NEW.unit
                OR OLD.container_id IS NOT NEW.container_id OR OLD.container_name IS NOT NEW.container_name
                OR OLD.pidns_level IS NOT NEW.pidns_level BEGIN
        UPDATE user_usage SET bytes = bytes - (200 + coalesce(length(CAST(OLD.cmdline AS BLOB)), 0)
                        + coalesce(length(CAST(OLD.unit AS BLOB)), 0)
                        + coalesce(length(CAST(OLD.container_id AS BLOB)), 0)
                        + coalesce(length(CAST(OLD.container_name AS BLOB)), 0)
                        + 32 * min(coalesce(OLD.pidns_level, 0), 3))
                WHERE uid = OLD.uid;
        INSERT INTO user_usage (uid, bytes) VALUES (NEW.uid, 200 + coalesce(length(CAST(NEW.cmdline AS BLOB)), 0)
                        + coalesce(length(CAST(NEW.unit AS BLOB)), 0)
                        + coalesce(length(CAST(NEW.container_id AS BLOB)), 0)
                        + coalesce(length(CAST(NEW.container_name AS BLOB)), 0)
                        + 32 * min(coalesce(NEW.pidns_level, 0), 3))
                ON CONFLICT (uid) DO UPDATE SET bytes = bytes + excluded.bytes;
END;
