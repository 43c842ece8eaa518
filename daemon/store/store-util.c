/* SPDX-License-Identifier: MIT */
/* Helpers of every part of the store (store-util.h). */
#include "store-util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sqlite_to_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_CANTOPEN:
                return -ENOENT;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EUCLEAN;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_INTERRUPT:
                return -ECANCELED;
        default:
                return -EIO;
        }
}

int sql_exec(sqlite3 *db, const char *sql) {
        return sqlite_to_errno(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

/* SQL text built from fmt; NULL when out of memory. */
static char *sql_vformat(const char *fmt, va_list ap) {
        char *sql;

        return vasprintf(&sql, fmt, ap) < 0 ? NULL : sql;
}

int sql_exec_fmt(sqlite3 *db, const char *fmt, ...) {
        _cleanup_free_ char *sql = NULL;
        va_list ap;

        va_start(ap, fmt);
        sql = sql_vformat(fmt, ap);
        va_end(ap);
        return sql ? sql_exec(db, sql) : -ENOMEM;
}

int sql_prepare(sqlite3 *db, sqlite3_stmt **ret, const char *fmt, ...) {
        _cleanup_free_ char *sql = NULL;
        va_list ap;

        va_start(ap, fmt);
        sql = sql_vformat(fmt, ap);
        va_end(ap);
        return sql ? sqlite_to_errno(sqlite3_prepare_v2(db, sql, -1, ret, NULL)) : -ENOMEM;
}

int sql_step_done(sqlite3_stmt *st) {
        int rc = sqlite3_step(st);

        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : (sqlite_to_errno(rc) ?: -EIO);
}

int sql_query_int(sqlite3 *db, const char *sql, int64_t arg, int64_t *ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        sqlite3_bind_int64(st, 1, arg);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                *ret = INT64_MIN; /* no row */
                return 0;
        }
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret = sqlite3_column_type(st, 0) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(st, 0);
        return 0;
}

/* SQLite may have rolled back already (e.g. on SQLITE_FULL): then a ROLLBACK would fail and
 * replace the error message that says why with "no transaction is active". */
void store_rollback(Store *s) {
        if (!sqlite3_get_autocommit(s->db))
                (void) sql_exec(s->db, "ROLLBACK");
}

int store_load_tiers(Store *s, TierState ret[_TIER_MAX]) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc, found = 0;

        rc = sqlite3_prepare_v2(s->db, "SELECT name, rolled_until_usec, kept_from_usec FROM tier", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *name = (const char *) sqlite3_column_text(st, 0);

                for (int t = 0; t < _TIER_MAX; t++)
                        if (name && strcmp(name, tier_name(t)) == 0) {
                                ret[t] = (TierState) {
                                        .width_usec = tier_width_usec[t],
                                        .rolled_until = t == TIER_RAW ? UINT64_MAX
                                                                      : (uint64_t) sqlite3_column_int64(st, 1),
                                        .kept_from = (uint64_t) sqlite3_column_int64(st, 2),
                                };
                                found++;
                        }
        }
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;
        return found == _TIER_MAX ? 0 : -EUCLEAN;
}
