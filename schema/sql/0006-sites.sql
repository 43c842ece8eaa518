-- trapstat database, schema version 6: the sites where processes trap and fault
-- (common/sites.h). A site is one instruction, named by the file it is mapped from and its
-- offset in that file, so that it means the same in every process and after the process
-- exited. Files and instructions are dictionaries (object, site), written once and referenced
-- by id from the counts (site_raw, site_minute, site_hour); maintenance deletes the entries no
-- count references any more (daemon/store/store-maintain.c).

-- A mapped file, or what holds code or data that is in no file.
CREATE TABLE object (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,   -- the file's path; for no file "[anon]", "[heap]", "[stack]", "[vdso]",
                              -- "[unmapped]", "[unknown]" (memory_kind_object())
        dev INTEGER NOT NULL, -- the file's st_dev (the kernel's encoding, major << 20 | minor); 0: no file
        ino INTEGER NOT NULL, -- the file's st_ino; 0: no file
        UNIQUE (name, dev, ino)
);

-- An instruction: a place in an object.
CREATE TABLE site (
        id INTEGER PRIMARY KEY,
        object_id INTEGER NOT NULL REFERENCES object (id),
        file_offset INTEGER NOT NULL, -- of the instruction in the file; its address for code in no file
        symbol TEXT,                  -- the ELF symbol holding it, as first learned; NULL: not known
        symbol_offset INTEGER,        -- from the start of symbol; NULL with symbol
        UNIQUE (object_id, file_offset)
);

-- Raw tier: counts per process, 10 s bucket and site (time_usec is the bucket start), added at
-- once with the tick (not through sample_pending: they are few). Only non-zero counts.
CREATE TABLE site_raw (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        kind INTEGER NOT NULL,             -- SiteKind: 0 trap (every one counted), 1 fault (sampled)
        vector INTEGER NOT NULL,           -- traps: the exception vector (32: not known); faults: 14 (#PF)
        period INTEGER NOT NULL,           -- 1 for traps; faults: one in period was sampled
        site_id INTEGER NOT NULL,          -- site.id: the instruction
        memory INTEGER NOT NULL,           -- MemoryKind of the faulting address: 0 none, 1 file, 2 anon,
                                           -- 3 heap, 4 stack, 5 vdso, 6 unmapped, 7 unknown
        memory_object_id INTEGER NOT NULL, -- object.id of the file for memory 1 (file); 0: none
        count INTEGER NOT NULL,            -- traps, or fault samples
        PRIMARY KEY (process_id, time_usec, kind, vector, period, site_id, memory, memory_object_id)
) WITHOUT ROWID;

-- The same columns summed over 1 min and 1 h; time_usec is the interval start.
CREATE TABLE site_minute (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        vector INTEGER NOT NULL,
        period INTEGER NOT NULL,
        site_id INTEGER NOT NULL,
        memory INTEGER NOT NULL,
        memory_object_id INTEGER NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (process_id, time_usec, kind, vector, period, site_id, memory, memory_object_id)
) WITHOUT ROWID;
CREATE TABLE site_hour (
        process_id INTEGER NOT NULL REFERENCES process (id) ON DELETE CASCADE,
        time_usec INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        vector INTEGER NOT NULL,
        period INTEGER NOT NULL,
        site_id INTEGER NOT NULL,
        memory INTEGER NOT NULL,
        memory_object_id INTEGER NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (process_id, time_usec, kind, vector, period, site_id, memory, memory_object_id)
) WITHOUT ROWID;

-- By time: roll-up reads, and retention and the size cap delete, a stretch of time; without
-- these each of them would read the whole table.
CREATE INDEX site_raw_by_time ON site_raw (time_usec);
CREATE INDEX site_minute_by_time ON site_minute (time_usec);
CREATE INDEX site_hour_by_time ON site_hour (time_usec);
-- By dictionary entry: whether any count still references a site or an object is one seek per
-- tier. Only files are memory objects: the rest (0) is left out of those indexes.
CREATE INDEX site_raw_by_site ON site_raw (site_id);
CREATE INDEX site_minute_by_site ON site_minute (site_id);
CREATE INDEX site_hour_by_site ON site_hour (site_id);
CREATE INDEX site_raw_by_memory_object ON site_raw (memory_object_id) WHERE memory_object_id != 0;
CREATE INDEX site_minute_by_memory_object ON site_minute (memory_object_id) WHERE memory_object_id != 0;
CREATE INDEX site_hour_by_memory_object ON site_hour (memory_object_id) WHERE memory_object_id != 0;
