/* SPDX-License-Identifier: MIT */
/* Sites: one process's sites over a stretch of time, summed per key of the site kind, with the
 * names the dictionaries give their ids. Only reads; writing them is store-sites-write.c. */
#include "store-read.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "array-util.h"

/* The rows of one process's sites summed per key of the site kind, with the names their ids
 * stand for, and how many there are, limit aside; %s: the union of the tiers' rows. The key order
 * of store_kinds[STORE_KIND_SITE]. Two versions of a file (one path) are two objects, so two sites:
 * the ids order them last. */
#define SITES_SQL                                                                                                      \
        "SELECT t.kind, t.vector, t.period, o.name, o.dev, o.ino, site.file_offset, site.symbol, "                     \
        "site.symbol_offset, t.memory, m.name, m.dev, m.ino, t.count, COUNT(*) OVER (), o.ctime_nsec, "                \
        "o.generation, t.time_ns FROM "                                                                                \
        "(SELECT kind, vector, period, site_id, memory, memory_object_id, SUM(count) AS count, "                       \
        "SUM(time_ns) AS time_ns FROM (%s) "                                                                           \
        "GROUP BY kind, vector, period, site_id, memory, memory_object_id) AS t "                                      \
        "JOIN site ON site.id = t.site_id JOIN object AS o ON o.id = site.object_id "                                  \
        "LEFT JOIN object AS m ON m.id = t.memory_object_id "                                                          \
        "ORDER BY t.count * t.period DESC, t.kind, o.name, site.file_offset, t.vector, t.period, t.memory, m.name, "   \
        "t.site_id, t.memory_object_id LIMIT ?3"

static char *column_strdup_or_null(sqlite3_stmt *st, int i, bool *failed) {
        char *v;

        if (sqlite3_column_type(st, i) == SQLITE_NULL)
                return NULL;
        v = column_strdup(st, i);
        if (!v)
                *failed = true;
        return v;
}

static int read_site(sqlite3_stmt *st, SiteCount *ret) {
        bool failed = false;
        SiteCount c = {
                .kind = (SiteKind) sqlite3_column_int(st, 0),
                .vector = (unsigned) sqlite3_column_int64(st, 1),
                .period = (uint32_t) sqlite3_column_int64(st, 2),
                .dev = (uint64_t) sqlite3_column_int64(st, 4),
                .ino = (uint64_t) sqlite3_column_int64(st, 5),
                .offset = (uint64_t) sqlite3_column_int64(st, 6),
                .symbol_offset = (uint64_t) sqlite3_column_int64(st, 8), /* NULL reads as 0 */
                .memory = (MemoryKind) sqlite3_column_int(st, 9),
                .memory_dev = (uint64_t) sqlite3_column_int64(st, 11),
                .memory_ino = (uint64_t) sqlite3_column_int64(st, 12),
                .count = (uint64_t) sqlite3_column_int64(st, 13),
                /* After the total (14), so that the columns before keep their numbers. */
                .version = { .ctime_nsec = (uint64_t) sqlite3_column_int64(st, 15),
                             .generation = (uint32_t) sqlite3_column_int64(st, 16) },
                .time_ns = (uint64_t) sqlite3_column_int64(st, 17),
        };

        c.object = column_strdup_or_null(st, 3, &failed);
        c.symbol = column_strdup_or_null(st, 7, &failed);
        c.memory_object = column_strdup_or_null(st, 10, &failed);
        if (failed || !c.object) {
                site_count_done(&c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

static int sites_read(Store *s, int64_t process_id, uint64_t since_usec, uint64_t until_usec, int kind, size_t limit,
                      SiteCount **ret, size_t *ret_n, uint64_t *ret_other) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        SiteCount *sites = NULL;
        size_t n = 0, capacity = 0, n_seg;
        uint64_t total = 0;
        int rc, r;

        if (kind >= _SITE_KIND_MAX)
                return -EINVAL;

        r = store_load_tiers(s, tiers);
        if (r < 0)
                goto finish;
        n_seg = tier_plan(tiers, (1U << _TIER_MAX) - 1, since_usec, until_usec, seg);
        r = prepare_over(s, &st, SITES_SQL, STORE_KIND_SITE, seg, n_seg, "process_id = ?1 AND (?2 < 0 OR kind = ?2)");
        if (r < 0)
                goto finish;
        sqlite3_bind_int64(st, 1, process_id);
        sqlite3_bind_int64(st, 2, kind);
        sqlite3_bind_int64(st, 3, clamp_i64(limit));

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = array_grow((void **) &sites, &capacity, n, 1, sizeof(*sites));
                if (r < 0)
                        goto finish;
                r = read_site(st, &sites[n]);
                if (r < 0)
                        goto finish;
                total = (uint64_t) sqlite3_column_int64(st, 14);
                n++;
        }
        if (rc != SQLITE_DONE)
                r = sqlite_to_errno(rc) ?: -EIO;
finish:
        if (r < 0) {
                site_counts_free(sites, n);
                return r;
        }
        *ret = sites;
        *ret_n = n;
        if (ret_other)
                *ret_other = total - n;
        return 0;
}

int store_sites(Store *s, int64_t process_id, uint64_t since_usec, uint64_t until_usec, int kind, size_t limit,
                SiteCount **ret, size_t *ret_n, uint64_t *ret_other) {
        /* Sites are written with their tick, never pending. */
        assert(store_in_snapshot(s));
        return sites_read(s, process_id, since_usec, until_usec, kind, limit, ret, ret_n, ret_other);
}
