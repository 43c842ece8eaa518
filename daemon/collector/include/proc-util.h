/* SPDX-License-Identifier: MIT */
#pragma once

/* Readers for /proc. Every function takes a directory fd for the proc root so tests can hand
 * them a fake tree from tests/data/. They return negative errno and never log. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "counters.h"

typedef struct ProcStat {
        char comm[COMM_MAX];
        uint64_t minflt;
        uint64_t majflt;
        uint64_t start_ticks; /* field 22, clock ticks since boot */
} ProcStat;

/* Parses the text of /proc/PID/stat. -EBADMSG when it is not in that format. */
int proc_stat_parse(const char *text, ProcStat *ret);
/* -ENOENT (or -ESRCH) once the process is gone. */
int proc_read_stat(int proc_fd, uint32_t pid, ProcStat *ret);
/* Whether pid still is the process that started at start_time_ns (ns since boot, as BPF and the
 * store have it; /proc has the start in clock ticks). */
bool proc_is_alive(int proc_fd, uint32_t pid, uint64_t start_time_ns);
/* For reading one process's stat every tick without the path lookup: an fd of /proc/PID/stat
 * (or negative errno), then proc_pread_stat() on it as often as needed. The fd stays bound to
 * that process: once it is gone, reads fail with -ESRCH, even if its pid is reused. */
int proc_open_stat(int proc_fd, uint32_t pid);
int proc_pread_stat(int fd, ProcStat *ret);

/* One line of /proc/PID/maps. path points into the line (its end cut off, " (deleted)" too); ""
 * for memory in no file. */
typedef struct ProcMapping {
        uint64_t start, end, offset;
        uint32_t major, minor;
        uint64_t ino;
        const char *path;
} ProcMapping;
/* Parses (and cuts) one line of /proc/PID/maps. -EBADMSG when it is not in that format. */
int proc_maps_parse_line(char *line, ProcMapping *ret);
/* /proc/PID/maps, opened for reading only when pid still is the process that started at
 * start_time_ns (both through one directory fd, so pid cannot be reused in between); -ESRCH
 * when it is another process or gone. */
int proc_open_maps(int proc_fd, uint32_t pid, uint64_t start_time_ns, FILE **ret);
/* The file mapped at [start, end) (a line of /proc/PID/maps), opened for reading through
 * /proc/PID/map_files/START-END, when pid still is the process that started at start_time_ns:
 * the file the process mapped, whatever its path is now (renamed, deleted, another file at the
 * path, a path in another mount namespace). -ESRCH when pid is another process or gone;
 * -ENOENT when nothing is mapped there; -EPERM where the kernel lets only CAP_SYS_ADMIN (or
 * CAP_CHECKPOINT_RESTORE) in the initial user namespace open it, -EACCES where this process may
 * not look into the other's /proc entry. What is opened is whatever is mapped there now: the
 * caller checks its identity. */
int proc_open_map_file(int proc_fd, uint32_t pid, uint64_t start_time_ns, uint64_t start, uint64_t end,
                       int *ret_fd);

/* Turns a NUL-separated argument vector (the format of /proc/PID/cmdline) of n bytes into one
 * line, arguments separated by spaces. With cut, the bytes may end inside a UTF-8 character,
 * which is then dropped. An empty vector gives -ENODATA. */
int proc_cmdline_format(const char *args, size_t n, bool cut, char **ret);

/* The owner of /proc/PID: the process's effective user (root while it is not dumpable). */
int proc_read_uid(int proc_fd, uint32_t pid, uint32_t *ret);

/* The command line as proc_cmdline_format() makes it, from at most max bytes. An empty
 * command line (kernel threads, zombies) gives -ENODATA. */
int proc_read_cmdline(int proc_fd, uint32_t pid, size_t max, char **ret);

/* The systemd unit the process runs in, from /proc/PID/cgroup: the innermost path component
 * ending in .service or .scope, of the unified (0::) hierarchy, else of name=systemd.
 * -ENODATA when it is in no unit. */
int proc_cgroup_parse_unit(const char *text, char **ret);
/* Whether a cgroup's name (n bytes of s) is a unit's: it ends in .service or .scope. */
bool proc_cgroup_name_is_unit(const char *s, size_t n);
/* The container the process runs in, from the same path (container_from_cgroup()): *ret
 * malloc'd; -ENODATA when it is in none. */
int proc_cgroup_parse_container(const char *text, Container **ret);
/* Both from one read of /proc/PID/cgroup: 0 and each malloc'd, or NULL where it is in none. */
int proc_read_cgroup(int proc_fd, uint32_t pid, char **ret_unit, Container **ret_container);

/* How many pid namespaces the process is in as this /proc sees them: the columns of NSpid in
 * /proc/PID/status (1: this /proc's own). -ENODATA where the kernel shows no NSpid (before 4.1). */
int proc_read_nspid_levels(int proc_fd, uint32_t pid, unsigned *ret);
/* The same of the process a pidfd of this process refers to (its fdinfo): bound to that process,
 * whatever took its pid since. -ENODATA where the kernel shows no NSpid there (before 5.10). */
int proc_read_pidfd_nspid_levels(int proc_fd, int pidfd, unsigned *ret);

/* /proc/self/mountinfo: this process's mounts; the first MiB of a longer one. */
int proc_read_mountinfo(int proc_fd, char **ret);

/* /proc/sys/kernel/random/boot_id, 36 characters. */
int proc_read_boot_id(int proc_fd, char ret[static 37]);
