/* SPDX-License-Identifier: MIT */
/* Writing a tick's sites (ProcessSample.sites): each count goes to the raw bucket of the site
 * kind at once, keyed by ids of the dictionaries `object` (a version of a file, or "[anon]" and
 * the like) and `site` (an offset in an object, with its symbol). Most sites of a tick were
 * written in earlier ticks, so the ids are remembered in a small cache: a site seen before is one
 * upsert, not four statements. */
#include "store-sites-write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Direct-mapped: an entry's slot is its hash, and a newcomer replaces whoever had it. Bounded,
 * and a miss costs only the statements the cache saves. */
#define SITE_SLOTS 1024
#define OBJECT_SLOTS 256

/* What names an object row: a version of a file (or "[anon]" and the like, the rest 0). */
typedef struct ObjectKey {
        const char *name;
        uint64_t dev, ino;
        ObjectVersion version;
} ObjectKey;

typedef struct IdSlot {
        char *name; /* the object's; NULL: empty */
        uint64_t dev, ino;
        ObjectVersion version;
        uint64_t offset;    /* site slots: the site's file offset */
        int64_t id;         /* site.id, or object.id in the object slots */
        bool has_symbol;    /* site slots: the row has a symbol, nothing to fill in */
} IdSlot;

typedef struct SiteIds {
        IdSlot sites[SITE_SLOTS];
        IdSlot objects[OBJECT_SLOTS];
} SiteIds;

/* What writing sites keeps in a Store (s->site_writer): the dictionaries' statements, and the
 * cache of ids, NULL until the first site. */
struct SiteWriter {
        sqlite3_stmt *find_object, *add_object, *upsert_site;
        SiteIds *ids;
};

static uint64_t hash_mix(uint64_t h, uint64_t v) {
        for (int i = 0; i < 8; i++, v >>= 8)
                h = (h ^ (v & 0xff)) * UINT64_C(0x100000001b3); /* FNV-1a */
        return h;
}

static uint64_t hash_object(const ObjectKey *o) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (const unsigned char *p = (const unsigned char *) o->name; *p; p++)
                h = (h ^ *p) * UINT64_C(0x100000001b3);
        h = hash_mix(hash_mix(h, o->dev), o->ino);
        return hash_mix(hash_mix(h, o->version.ctime_nsec), o->version.generation);
}

static bool slot_is(const IdSlot *slot, const ObjectKey *o, uint64_t offset) {
        return slot->name && slot->dev == o->dev && slot->ino == o->ino &&
               slot->version.ctime_nsec == o->version.ctime_nsec && slot->version.generation == o->version.generation &&
               slot->offset == offset && strcmp(slot->name, o->name) == 0;
}

/* Remembers an id. Best effort: without memory for the name the slot stays empty. */
static void slot_set(IdSlot *slot, const ObjectKey *o, uint64_t offset, int64_t id, bool has_symbol) {
        if (!slot_is(slot, o, offset)) {
                free(slot->name);
                *slot = (IdSlot) { .name = strdup(o->name), .dev = o->dev, .ino = o->ino, .version = o->version,
                                   .offset = offset };
        }
        slot->id = id;
        slot->has_symbol = has_symbol;
}

static void slots_clear(IdSlot *slots, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(slots[i].name);
                slots[i] = (IdSlot) {};
        }
}

void store_site_ids_clear(Store *s) {
        if (!s->site_writer || !s->site_writer->ids)
                return;
        slots_clear(s->site_writer->ids->sites, SITE_SLOTS);
        slots_clear(s->site_writer->ids->objects, OBJECT_SLOTS);
}

int store_sites_prepare(Store *s) {
        SiteWriter *w;
        int r;

        w = s->site_writer = calloc(1, sizeof(*s->site_writer));
        if (!w)
                return -ENOMEM;
        r = sql_prepare(s->db, &w->find_object,
                        "SELECT id FROM object WHERE name = ?1 AND dev = ?2 AND ino = ?3 AND ctime_nsec = ?4 "
                        "AND generation = ?5");
        if (r < 0)
                return r;
        r = sql_prepare(s->db, &w->add_object,
                        "INSERT INTO object (name, dev, ino, ctime_nsec, generation) VALUES (?1, ?2, ?3, ?4, ?5) "
                        "RETURNING id");
        if (r < 0)
                return r;
        /* A symbol is written when the site is first stored, or later while it has none; once
         * written it stays (store_sites() in store.h). The pair goes together: symbol_offset
         * means nothing without its symbol. */
        return sql_prepare(s->db, &w->upsert_site,
                           "INSERT INTO site (object_id, file_offset, symbol, symbol_offset) VALUES (?1, ?2, ?3, ?4) "
                           "ON CONFLICT (object_id, file_offset) DO UPDATE SET "
                           "symbol = coalesce(site.symbol, excluded.symbol), "
                           "symbol_offset = CASE WHEN site.symbol IS NULL THEN excluded.symbol_offset "
                           "ELSE site.symbol_offset END "
                           "RETURNING id, symbol IS NOT NULL");
}

void store_sites_done(Store *s) {
        SiteWriter *w = s->site_writer;

        if (!w)
                return;
        sqlite3_finalize(w->find_object);
        sqlite3_finalize(w->add_object);
        sqlite3_finalize(w->upsert_site);
        store_site_ids_clear(s);
        free(w->ids);
        free(w);
        s->site_writer = NULL;
}

/* Runs find_object or add_object for o: 1 and the id when it returned a row, 0 when none. */
static int object_step(sqlite3_stmt *st, const ObjectKey *o, int64_t *ret) {
        int rc;

        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, o->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (int64_t) o->dev);
        sqlite3_bind_int64(st, 3, (int64_t) o->ino);
        sqlite3_bind_int64(st, 4, (int64_t) o->version.ctime_nsec);
        sqlite3_bind_int64(st, 5, o->version.generation);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : (sqlite_to_errno(rc) ?: -EIO);
}

/* The id of the object row of o, created if needed. */
static int object_id(Store *s, const ObjectKey *o, int64_t *ret) {
        IdSlot *slot = &s->site_writer->ids->objects[hash_object(o) % OBJECT_SLOTS];
        int64_t id = 0;
        int r;

        if (slot_is(slot, o, 0)) {
                *ret = slot->id;
                return 0;
        }
        /* Look before inserting: an upsert would write the row it finds. */
        r = object_step(s->site_writer->find_object, o, &id);
        if (r == 0)
                r = object_step(s->site_writer->add_object, o, &id);
        if (r == 0)
                r = -EIO; /* RETURNING gave no row */
        if (r < 0)
                return r;
        slot_set(slot, o, 0, id, false);
        *ret = id;
        return 0;
}

/* The id of the site row of sc's instruction, created if needed; its symbol written when the row
 * has none yet. */
static int site_id(Store *s, const SiteCount *sc, int64_t *ret) {
        const ObjectKey o = { .name = sc->object, .dev = sc->dev, .ino = sc->ino, .version = sc->version };
        IdSlot *slot = &s->site_writer->ids->sites[hash_mix(hash_object(&o), sc->offset) % SITE_SLOTS];
        sqlite3_stmt *st = s->site_writer->upsert_site;
        int64_t object = 0;
        int rc, r;

        if (slot_is(slot, &o, sc->offset) && (slot->has_symbol || !sc->symbol)) {
                *ret = slot->id;
                return 0;
        }
        r = object_id(s, &o, &object);
        if (r < 0)
                return r;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, object);
        sqlite3_bind_int64(st, 2, (int64_t) sc->offset);
        if (sc->symbol) {
                sqlite3_bind_text(st, 3, sc->symbol, -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 4, (int64_t) sc->symbol_offset);
        } else {
                /* The offset means nothing without its symbol. */
                sqlite3_bind_null(st, 3);
                sqlite3_bind_null(st, 4);
        }
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                return sqlite_to_errno(rc) ?: -EIO;
        }
        *ret = sqlite3_column_int64(st, 0);
        slot_set(slot, &o, sc->offset, *ret, sqlite3_column_int(st, 1) != 0);
        sqlite3_reset(st);
        return 0;
}

static bool site_valid(const SiteCount *sc) {
        return sc->object && (unsigned) sc->kind < _SITE_KIND_MAX && (unsigned) sc->memory < _MEMORY_KIND_MAX &&
               sc->period > 0;
}

int store_sites_fill(Store *s, const SiteCount *sites, size_t n) {
        int r;

        if (n == 0)
                return 0;
        if (!s->site_writer->ids) {
                s->site_writer->ids = calloc(1, sizeof(*s->site_writer->ids));
                if (!s->site_writer->ids)
                        return -ENOMEM;
        }
        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                int64_t unused;

                if (!sites[i].object || !sites[i].symbol)
                        continue;
                r = site_id(s, &sites[i], &unused);
                if (r < 0)
                        goto rollback;
        }
        r = sql_exec(s->db, "COMMIT");
        if (r < 0)
                goto rollback;
        return 0;
rollback:
        store_rollback(s);
        store_site_ids_clear(s);
        return r;
}

int store_sites_add(Store *s, int64_t process_id, uint64_t bucket_usec, const SiteCount *sites, size_t n) {
        sqlite3_stmt *st = s->add_raw[STORE_KIND_SITE];

        if (n > 0 && !s->site_writer->ids) {
                s->site_writer->ids = calloc(1, sizeof(*s->site_writer->ids));
                if (!s->site_writer->ids)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                const SiteCount *sc = &sites[i];
                const ObjectKey memory = { .name = sc->memory_object, .dev = sc->memory_dev, .ino = sc->memory_ino };
                int64_t site = 0, memory_object = 0;
                int r;

                if (!site_valid(sc))
                        return -EINVAL;
                if (sc->count == 0 && sc->time_ns == 0)
                        continue; /* only non-zero counts are stored */
                r = site_id(s, sc, &site);
                if (r >= 0 && sc->memory_object)
                        r = object_id(s, &memory, &memory_object);
                if (r < 0)
                        return r;

                /* The site kind's raw upsert: its keys in store_kinds[] order, then the count and the
                 * time. */
                sqlite3_reset(st);
                sqlite3_bind_int64(st, 1, process_id);
                sqlite3_bind_int64(st, 2, (int64_t) bucket_usec);
                sqlite3_bind_int64(st, 3, sc->kind);
                sqlite3_bind_int64(st, 4, sc->vector);
                sqlite3_bind_int64(st, 5, sc->period);
                sqlite3_bind_int64(st, 6, site);
                sqlite3_bind_int64(st, 7, sc->memory);
                sqlite3_bind_int64(st, 8, memory_object);
                sqlite3_bind_int64(st, 9, clamp_i64(sc->count));
                sqlite3_bind_int64(st, 10, clamp_i64(sc->time_ns));
                r = sql_step_done(st);
                if (r < 0)
                        return r;
        }
        return 0;
}
