/* SPDX-License-Identifier: MIT */
#pragma once

/* The state directory's policy: the directory holds every command line the daemon has seen, so
 * it must be ours and writable by nobody else; the database files in it are never followed
 * through a link and are private; one daemon per directory, held by a lock file. These functions
 * log each failure with its context (the path, the owner, the other daemon's pid) and return a
 * negative errno; their callers only pass it on. */

#include <sys/types.h>

/* mkdir -p: path and each missing parent, with mode. -ENAMETOOLONG past PATH_MAX. Does not log. */
int mkdir_parents(const char *path, mode_t mode);

/* Creates path (0700) when missing, then refuses it unless it is a directory of ours that
 * neither group nor others may write to: -ENOTDIR, -EPERM. */
int state_dir_prepare(const char *path);

/* The database db_path and its -wal and -shm files: each one present must be a regular file of
 * ours, not a link (-ELOOP, -EINVAL, -EPERM); those readable by others are made 0600. A missing
 * database is created, 0600, so that SQLite gives its companions the same mode. */
int state_dir_check_database(const char *db_path);

/* Takes path/trapstatd.lock and writes our pid into it; the lock lasts as long as the returned
 * fd stays open, and the kernel drops it however we exit. -EBUSY when another process holds it
 * (logged with its pid, when the file names one); -ELOOP when the file is a link. */
int state_dir_lock(const char *path, int *ret_fd);

/* The pid the holder of the lock file fd wrote into it ("1234\n"), or 0 when there is none: the
 * file may be empty while the holder is starting, or hold anything after a crash. */
pid_t state_dir_lock_holder(int fd);

/* prepare, lock, then the database's checks, in the order a second daemon needs: it must touch
 * neither the database nor the socket. Returns the lock's fd and the database's path
 * (path/trapstat.db, to be freed). */
int state_dir_open(const char *path, int *ret_lock_fd, char **ret_db_path);
