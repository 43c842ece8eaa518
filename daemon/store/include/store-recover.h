/* SPDX-License-Identifier: MIT */
#pragma once

/* Opening the store so that a corrupt database never keeps the daemon from starting: a file
 * SQLite calls corrupt is moved aside and a fresh one is created. Library-style like store.h:
 * returns negative errno and does not log; the caller logs the move once. */

#include <stdint.h>

#include "store.h"

/* Opens the database at path like store_open(), after checking an existing file with
 * PRAGMA quick_check. A file that is not a database, fails the check, or that store_open()
 * refuses with -EUCLEAN is renamed to
 *
 *     <path>.corrupt-YYYYMMDDTHHMMSSZ            (UTC time of now_usec; "-N" appended, N = 1, 2, ...,
 *                                                 when a file of that name exists)
 *
 * and its companions <path>-wal, <path>-shm and <path>-journal, where present, to that name
 * plus the same suffix (<path>.corrupt-...Z-wal ...), so `sqlite3 <moved name>` still reads the
 * moved file together with its write-ahead log. Then a new database is created at path.
 *
 * On success *ret_moved_to (if not NULL) is the malloc'd new name when a file was moved, else
 * NULL. Nothing that is not proof of corruption moves a file: a database newer than this daemon
 * (-EPROTO), a missing directory, missing permissions, a locked file ... are returned as
 * store_open() returns them, with the file left where it is. */
int store_open_recover(const char *path, const char *boot_id, uint64_t now_usec, Store **ret, char **ret_moved_to);
