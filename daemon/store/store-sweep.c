/* SPDX-License-Identifier: MIT */
/* Sweeping the site kind's dictionaries (`site`, `object`) of the entries no row references any
 * more, a bounded step at a time: after maintenance or the size cap deleted rows of the kind. */
#include "store-sweep.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "store-sites-write.h"

enum { SWEEP_NONE, SWEEP_SITES, SWEEP_OBJECTS };

/* Rows of the site kind are about to leave a tier: dictionary entries may lose their last
 * reference. */
void store_sweep_start(Store *s) {
        if (s->sweep != SWEEP_NONE) {
                /* Entries before the cursor may have lost theirs too: once more after this one. */
                s->sweep_again = true;
                return;
        }
        s->sweep = SWEEP_SITES;
        s->sweep_cursor = 0;
}

/* " AND NOT EXISTS (...)" for each tier of the site kind: no row has column = <table>.id. Each a
 * seek on the tier's index by that column (schema/sql/0006-sites.sql). */
static void fprint_unreferenced(FILE *f, const char *table, const char *column, const char *also) {
        for (int t = TIER_RAW; t < _TIER_MAX; t++)
                fprintf(f, " AND NOT EXISTS (SELECT 1 FROM %s WHERE %s = %s.id%s)",
                        store_kinds[STORE_KIND_SITE].tables[t], column, table, also);
}

/* One step of a sweep: of the next batch of entries of the dictionary swept, deletes those no
 * row of the site kind references. Sites first, then objects, which lose references as sites go.
 * A bounded step whatever the size of the dictionaries: ids are looked at in order, from the
 * cursor on, an index seek or four each. */
int store_sweep_step(Store *s, size_t batch, bool *more) {
        const char *table = s->sweep == SWEEP_SITES ? "site" : "object";
        _cleanup_free_ char *last_sql = NULL;
        char *del = NULL;
        size_t size = 0;
        int64_t last;
        FILE *f;
        int r;

        if (s->sweep == SWEEP_NONE)
                return 0;
        if (asprintf(&last_sql, "SELECT MAX(id) FROM (SELECT id FROM %s WHERE id > ?1 ORDER BY id LIMIT %zu)", table,
                     batch) < 0)
                return -ENOMEM;
        r = sql_query_int(s->db, last_sql, s->sweep_cursor, &last);
        if (r < 0)
                return r;
        if (last == INT64_MIN) {
                /* This dictionary is done. */
                if (s->sweep == SWEEP_SITES)
                        s->sweep = SWEEP_OBJECTS;
                else {
                        s->sweep = s->sweep_again ? SWEEP_SITES : SWEEP_NONE;
                        s->sweep_again = false;
                }
                s->sweep_cursor = 0;
                *more = *more || s->sweep != SWEEP_NONE;
                return 0;
        }

        f = open_memstream(&del, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "DELETE FROM %s WHERE id > %" PRId64 " AND id <= %" PRId64, table, s->sweep_cursor, last);
        if (s->sweep == SWEEP_SITES)
                fprint_unreferenced(f, "site", "site_id", "");
        else {
                fputs(" AND NOT EXISTS (SELECT 1 FROM site WHERE object_id = object.id)", f);
                /* The term of the indexes' WHERE, so that they are used. */
                fprint_unreferenced(f, "object", "memory_object_id", " AND memory_object_id != 0");
        }
        if (!memstream_done(f, &del))
                return -ENOMEM;
        r = sql_exec(s->db, del);
        free(del);
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) > 0)
                store_site_ids_clear(s); /* the ids it remembers may be gone */
        s->sweep_cursor = last;
        *more = true;
        return 0;
}
