/* SPDX-License-Identifier: MIT */
#include "store-recover.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "macro.h"
#include "time-util.h"

/* Files SQLite keeps next to a database. They go with it: a log left behind would be replayed
 * into the new database created under the old name. */
static const char *const companions[] = { "-wal", "-shm", "-journal" };

/* True only when SQLite says so: the file is not a database, or quick_check finds damage.
 * A missing file, missing permissions, a lock or a lack of memory prove nothing; store_open()
 * meets them too and reports them. */
static bool database_is_corrupt(const char *path) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        bool corrupt = false;
        int rc;

        /* Read-write so that a write-ahead log left by a crash is read and checked too; not
         * create: a missing file is not corrupt. No checkpoint when closing: it would write the
         * log into a file that may be corrupt and delete it, and a file moved aside should be
         * kept as it was found. */
        rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
        if (rc == SQLITE_OK) {
                rc = sqlite3_step(st);
                /* One row "ok", or up to 100 rows describing the damage. */
                if (rc == SQLITE_ROW)
                        corrupt = strcmp((const char *) sqlite3_column_text(st, 0) ?: "", "ok") != 0;
        }
        if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB)
                corrupt = true;
        sqlite3_finalize(st);
        sqlite3_close(db);
        return corrupt;
}

static int exists_suffixed(const char *base, const char *suffix) {
        _cleanup_free_ char *p = NULL;
        struct stat st;

        if (asprintf(&p, "%s%s", base, suffix) < 0)
                return -ENOMEM;
        return lstat(p, &st) == 0;
}

/* The first free name of <path>.corrupt-<stamp>, <path>.corrupt-<stamp>-1, -2 ...; free means
 * neither it nor any of its companion names exists. */
static int pick_moved_name(const char *path, uint64_t now_usec, char **ret) {
        char stamp[sizeof("YYYYMMDDTHHMMSSZ")];
        time_t t = (time_t) (now_usec / USEC_PER_SEC);
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm) == 0)
                return -EINVAL;

        for (unsigned n = 0; n < 1000; n++) {
                _cleanup_free_ char *name = NULL;
                int taken;

                if ((n == 0 ? asprintf(&name, "%s.corrupt-%s", path, stamp)
                            : asprintf(&name, "%s.corrupt-%s-%u", path, stamp, n)) < 0)
                        return -ENOMEM;
                taken = exists_suffixed(name, "");
                for (size_t i = 0; taken == 0 && i < ELEMENTSOF(companions); i++)
                        taken = exists_suffixed(name, companions[i]);
                if (taken < 0)
                        return taken;
                if (taken == 0) {
                        *ret = TAKE_PTR(name);
                        return 0;
                }
        }
        return -EEXIST;
}

static int rename_suffixed(const char *from, const char *to, const char *suffix) {
        _cleanup_free_ char *f = NULL, *t = NULL;

        if (asprintf(&f, "%s%s", from, suffix) < 0 || asprintf(&t, "%s%s", to, suffix) < 0)
                return -ENOMEM;
        return rename(f, t) < 0 ? -errno : 0;
}

static int move_aside(const char *path, uint64_t now_usec, char **ret) {
        _cleanup_free_ char *moved = NULL;
        int r;

        r = pick_moved_name(path, now_usec, &moved);
        if (r < 0)
                return r;
        /* Companions first: should a rename fail, the database stays where it was, with what is
         * left of its companions, and is found corrupt again on the next start. The other way
         * round, a stale log could be left next to the new database. */
        for (size_t i = 0; i < ELEMENTSOF(companions); i++) {
                r = rename_suffixed(path, moved, companions[i]);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        r = rename_suffixed(path, moved, "");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(moved);
        return 0;
}

int store_open_recover(const char *path, const char *boot_id, uint64_t now_usec, Store **ret, char **ret_moved_to) {
        _cleanup_free_ char *moved_to = NULL;
        Store *s = NULL;
        int r;

        /* Corruption that store_open() runs into in spite of the check goes the same way. */
        r = database_is_corrupt(path) ? -EUCLEAN : store_open(path, boot_id, &s);
        if (r == -EUCLEAN) {
                r = move_aside(path, now_usec, &moved_to);
                if (r < 0)
                        return r;
                r = store_open(path, boot_id, &s);
        }
        if (r < 0)
                return r;

        *ret = s;
        if (ret_moved_to)
                *ret_moved_to = TAKE_PTR(moved_to);
        return 0;
}
