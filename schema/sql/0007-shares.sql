-- trapstat database, schema version 7: what each user's history takes, for the shares of the size
-- cap (daemon/store/store-share.c): when the database is over --max-db-size, the user holding the most
-- loses their oldest processes' rows first. bytes is an estimate kept by the triggers below, a
-- fixed cost per row of each table (the row, its key and its index entries, as measured on a
-- store-bench database) plus the text of a process row. The site dictionaries (object, site) are
-- shared by every user and counted in the cap only.
CREATE TABLE user_usage (
        uid INTEGER PRIMARY KEY,
        bytes INTEGER NOT NULL
);
-- A user's oldest processes first.
CREATE INDEX process_by_uid ON process (uid, first_seen_usec);

CREATE TRIGGER usage_process_insert AFTER INSERT ON process BEGIN
        INSERT INTO user_usage (uid, bytes) VALUES (NEW.uid, 200 + coalesce(length(CAST(NEW.cmdline AS BLOB)), 0) + coalesce(length(CAST(NEW.unit AS BLOB)), 0))
                ON CONFLICT (uid) DO UPDATE SET bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER usage_process_delete AFTER DELETE ON process BEGIN
        UPDATE user_usage SET bytes = bytes - (200 + coalesce(length(CAST(OLD.cmdline AS BLOB)), 0) + coalesce(length(CAST(OLD.unit AS BLOB)), 0)) WHERE uid = OLD.uid;
END;
-- A new uid (a setuid exec) or text: the row's cost moves. Its rows stay counted where they were.
CREATE TRIGGER usage_process_update AFTER UPDATE OF uid, cmdline, unit ON process
        WHEN OLD.uid IS NOT NEW.uid OR OLD.cmdline IS NOT NEW.cmdline OR OLD.unit IS NOT NEW.unit BEGIN
        UPDATE user_usage SET bytes = bytes - (200 + coalesce(length(CAST(OLD.cmdline AS BLOB)), 0) + coalesce(length(CAST(OLD.unit AS BLOB)), 0)) WHERE uid = OLD.uid;
        INSERT INTO user_usage (uid, bytes) VALUES (NEW.uid, 200 + coalesce(length(CAST(NEW.cmdline AS BLOB)), 0) + coalesce(length(CAST(NEW.unit AS BLOB)), 0))
                ON CONFLICT (uid) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

-- Rows: each a seek of its process's uid. A process is deleted only once it has no rows left.
CREATE TRIGGER usage_sample_raw_insert AFTER INSERT ON sample_raw BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_sample_raw_delete AFTER DELETE ON sample_raw BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_sample_minute_insert AFTER INSERT ON sample_minute BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_sample_minute_delete AFTER DELETE ON sample_minute BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_sample_hour_insert AFTER INSERT ON sample_hour BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_sample_hour_delete AFTER DELETE ON sample_hour BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_trap_raw_insert AFTER INSERT ON trap_raw BEGIN
        UPDATE user_usage SET bytes = bytes + 32 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_trap_raw_delete AFTER DELETE ON trap_raw BEGIN
        UPDATE user_usage SET bytes = bytes - 32 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_trap_minute_insert AFTER INSERT ON trap_minute BEGIN
        UPDATE user_usage SET bytes = bytes + 32 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_trap_minute_delete AFTER DELETE ON trap_minute BEGIN
        UPDATE user_usage SET bytes = bytes - 32 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_trap_hour_insert AFTER INSERT ON trap_hour BEGIN
        UPDATE user_usage SET bytes = bytes + 32 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_trap_hour_delete AFTER DELETE ON trap_hour BEGIN
        UPDATE user_usage SET bytes = bytes - 32 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_signal_raw_insert AFTER INSERT ON signal_raw BEGIN
        UPDATE user_usage SET bytes = bytes + 32 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_signal_raw_delete AFTER DELETE ON signal_raw BEGIN
        UPDATE user_usage SET bytes = bytes - 32 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_signal_minute_insert AFTER INSERT ON signal_minute BEGIN
        UPDATE user_usage SET bytes = bytes + 32 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_signal_minute_delete AFTER DELETE ON signal_minute BEGIN
        UPDATE user_usage SET bytes = bytes - 32 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_signal_hour_insert AFTER INSERT ON signal_hour BEGIN
        UPDATE user_usage SET bytes = bytes + 32 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_signal_hour_delete AFTER DELETE ON signal_hour BEGIN
        UPDATE user_usage SET bytes = bytes - 32 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_site_raw_insert AFTER INSERT ON site_raw BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_site_raw_delete AFTER DELETE ON site_raw BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_site_minute_insert AFTER INSERT ON site_minute BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_site_minute_delete AFTER DELETE ON site_minute BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;
CREATE TRIGGER usage_site_hour_insert AFTER INSERT ON site_hour BEGIN
        UPDATE user_usage SET bytes = bytes + 64 WHERE uid = (SELECT uid FROM process WHERE id = NEW.process_id);
END;
CREATE TRIGGER usage_site_hour_delete AFTER DELETE ON site_hour BEGIN
        UPDATE user_usage SET bytes = bytes - 64 WHERE uid = (SELECT uid FROM process WHERE id = OLD.process_id);
END;

-- What an older database holds already.
INSERT INTO user_usage (uid, bytes) SELECT uid, SUM(200 + coalesce(length(CAST(process.cmdline AS BLOB)), 0) + coalesce(length(CAST(process.unit AS BLOB)), 0)) FROM process GROUP BY uid;
UPDATE user_usage SET bytes = bytes + 64 * (SELECT count(*) FROM process p JOIN sample_raw r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 64 * (SELECT count(*) FROM process p JOIN sample_minute r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 64 * (SELECT count(*) FROM process p JOIN sample_hour r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 32 * (SELECT count(*) FROM process p JOIN trap_raw r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 32 * (SELECT count(*) FROM process p JOIN trap_minute r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 32 * (SELECT count(*) FROM process p JOIN trap_hour r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 32 * (SELECT count(*) FROM process p JOIN signal_raw r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 32 * (SELECT count(*) FROM process p JOIN signal_minute r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 32 * (SELECT count(*) FROM process p JOIN signal_hour r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 64 * (SELECT count(*) FROM process p JOIN site_raw r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 64 * (SELECT count(*) FROM process p JOIN site_minute r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
UPDATE user_usage SET bytes = bytes + 64 * (SELECT count(*) FROM process p JOIN site_hour r ON r.process_id = p.id WHERE p.uid = user_usage.uid);
