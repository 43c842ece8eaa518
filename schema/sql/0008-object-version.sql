-- trapstat database, schema version 8: an object is a version of a file, not a path and an inode
-- number. A file deleted and another created at the same path can get the same inode number (what
-- `rm app; cp new app` may do, and what a user can arrange); keyed by (name, dev, ino) alone the new
-- file's sites were stored in the old file's rows, and kept the old file's symbol ("symbol as
-- first learned", 0006-sites.sql) for good. The version is what the kernel's inode said when the
-- file was named (common/sites.h, ObjectVersion): its change time and generation, which a reuse of
-- the inode number changes. A new version is a new object row, with site rows and symbols of its
-- own; replies keep rows of one name apart by id, as they did. The file a fault touched
-- (memory_object_id) is kept with version 0: it has no symbol to inherit, and a data file written
-- while mapped changes its change time with every write, which would make a row per write.
--
-- SQLite cannot change a UNIQUE constraint in place: the table is rebuilt the documented way
-- (https://www.sqlite.org/lang_altertable.html#otheralter), every id kept, so that site.object_id
-- and the tiers' memory_object_id still point at their rows. store_migrate() runs migrations with
-- foreign keys off (site references object: dropping the old table would fail with them on) and
-- checks them (PRAGMA foreign_key_check) before the commit. No index, trigger or view names the
-- table (0001 to 0007): the only index is the one of its UNIQUE constraint, made with the table.
CREATE TABLE object_new (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,   -- the file's path; for no file "[anon]", "[heap]", "[stack]", "[vdso]",
                              -- "[unmapped]", "[unknown]" (memory_kind_object())
        dev INTEGER NOT NULL, -- the file's st_dev (the kernel's encoding, major << 20 | minor); 0: no file
        ino INTEGER NOT NULL, -- the file's st_ino; 0: no file
        ctime_nsec INTEGER NOT NULL DEFAULT 0, -- the inode's change time when the file was named, ns since
                                               -- the epoch; 0: not known, no file, or a fault's file
        generation INTEGER NOT NULL DEFAULT 0, -- the inode's generation then (0 where the file system
                                               -- keeps none); 0 also as for ctime_nsec
        UNIQUE (name, dev, ino, ctime_nsec, generation)
);

-- Rows written before the version was kept: version 0. New sites of the same files are named with
-- their version and go to new rows; these keep the counts and symbols they have.
INSERT INTO object_new (id, name, dev, ino, ctime_nsec, generation) SELECT id, name, dev, ino, 0, 0 FROM object;
DROP TABLE object;
ALTER TABLE object_new RENAME TO object;
