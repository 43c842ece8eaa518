/* SPDX-License-Identifier: MIT */
#pragma once

/* The rows of trapstat top, kept between refreshes (no curses here: unit-tested on its own).
 *
 * Traps are rare: a process that trapped once must stay on the screen, not flash for one tick.
 * So the table keeps every process it was told of — seeded from Top (the last --window), then
 * fed every Watch tick — with two sets of counts: those of the last refresh (shown as rates)
 * and the totals since the view started (the seed included). A process the daemon reports
 * exited is marked and dropped once it has been gone for the window; past max_rows the rows
 * idle the longest go first, exited ones before live ones.
 *
 * Rows can be shown per process or grouped by unit, comm, user or container (top_table_view()). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "filter.h"

typedef enum TopGroup {
        TOP_GROUP_PROCESS,
        TOP_GROUP_UNIT,
        TOP_GROUP_COMM,
        TOP_GROUP_USER,
        TOP_GROUP_CONTAINER,
        _TOP_GROUP_MAX,
} TopGroup;

/* "process", "unit", "comm", "user", "container"; and back (-EINVAL for another name). */
const char *top_group_name(TopGroup g);
int top_group_from_name(const char *name, TopGroup *ret);

/* Counts of one process (or one group): faults, the time they took, what it waited for (the
 * kernel's delay accounting), all traps, and traps per vector. */
typedef struct TopCounts {
        Faults faults;
        uint64_t time_ns; /* time spent in faults (FaultTime: minor + major + kernel) */
        Stall stall;      /* Counters.stall, summed */
        /* A Counters.stall in the sum was null or missing (the kernel kept no delay accounting, an
         * older daemon): as with Faults.unknown, a sum with a part unknown is unknown, never a
         * false zero. */
        bool stall_unknown;
        uint64_t traps;
        json_t *vectors; /* owned: vector -> count; NULL while none */
} TopCounts;

typedef struct TopRow {
        int64_t pid, start_time; /* -1 for a group */
        json_t *process;         /* the newest Process object (owned reference); a group's first */
        char *key;               /* a group's key (unit, comm or user name); NULL for a process */
        TopCounts last;          /* the last refresh */
        TopCounts pending;       /* ticks since the last refresh */
        TopCounts total;         /* since the view started, the seed included */
        uint64_t last_active_usec;
        uint64_t trapped_refresh; /* the refresh that last showed a trap, +1; 0: none */
        bool exited;
        uint64_t exited_usec;
        size_t processes, exited_processes; /* a group's */
} TopRow;

typedef struct TopTable {
        TopRow *rows;
        size_t n_rows, n_alloc;
        size_t max_rows;
        uint64_t keep_exited_usec; /* how long an exited process stays */
        /* Over every process the daemon counted for this view, also those not kept. */
        TopCounts all_last, all_pending;
        uint64_t interval_usec, pending_interval_usec; /* length of the last refresh, of the pending one */
        unsigned ticks, pending_ticks;
        uint64_t time_usec; /* end of the newest tick */
        uint64_t missed, pending_missed;
        uint64_t processes, pending_processes; /* most processes in one tick of the refresh */
        uint64_t refreshes;
} TopTable;

void top_table_init(TopTable *t, size_t max_rows, uint64_t keep_exited_usec);
void top_table_done(TopTable *t);

/* Adds the rows of a Top reply as totals (the seed): 0, -EBADMSG, -ENOMEM. */
int top_table_seed(TopTable *t, json_t *top_reply);
/* Adds one Watch reply to what the next refresh shows, and to the totals; marks the processes
 * of its exited list. 0, -EBADMSG when it is not a Watch reply, -ENOMEM. */
int top_table_add_tick(TopTable *t, json_t *watch_reply);
/* Ends a refresh: the pending counts become the last ones; exited processes gone longer than
 * keep_exited_usec (by now_usec) are dropped, and rows beyond max_rows. */
int top_table_refresh(TopTable *t, uint64_t now_usec);
/* Whether a trap was counted for the row within the last n refreshes. */
bool top_row_trapped_recently(const TopTable *t, const TopRow *r, unsigned n);

/* Sorts by the last refresh's count of sort, then by its total, then all faults, then pid. */
void top_rows_sort(TopRow *rows, size_t n, const SortKey *sort);
/* Whether the row's process passes the filter. */
bool top_row_matches(const TopRow *r, const ProcessFilter *filter);
/* The rows that pass filter, grouped by g (TOP_GROUP_PROCESS: one row per process), sorted:
 * a new array of new rows in *ret (free with top_rows_free()). 0 or -ENOMEM. */
int top_table_view(const TopTable *t, const ProcessFilter *filter, TopGroup g, const SortKey *sort, TopRow **ret,
                   size_t *ret_n);
void top_rows_free(TopRow *rows, size_t n);
/* The key a process is grouped under: its unit ("-" without one), comm, user name (the uid
 * without one), or container (format_container_key(): its name, else RUNTIME:ID12; "-" for none);
 * a new string, NULL on ENOMEM. */
char *top_group_key(json_t *process, TopGroup g);
/* That of a Container object (the IDL's; null or absent: none). */
char *top_container_key(json_t *container);

/* The columns that only some processes need, shown when one of a table's processes needs them:
 * NSPID, its pid in its own pid namespace, for a process whose nsPid differs from its pid (one
 * in a container's namespace); CONTAINER for a process in a container, as wide as the widest key
 * (escaped, at most TOP_CONTAINER_WIDTH columns); the rate tables' columns of major faults by
 * cause for a process that had one of a cause told (Linux 5.17 and later, source major_cause):
 * major faults are rare, and three columns of zeros would push the unit off the screen. */
#define TOP_CONTAINER_WIDTH 32
typedef struct TopLayout {
        bool ns_pid;
        size_t container_width; /* 0: no CONTAINER column */
        bool major_causes;      /* FILE/s ANON/s SHMEM/s (top-format.h) */
        bool stall;             /* %STALL (top-format.h) */
} TopLayout;

/* Whether sort is one of the causes of major faults (majorFile, majorAnon, majorShmem). */
bool top_sort_is_major_cause(const SortKey *sort);

/* Whether a Process object has an nsPid that differs from its pid. */
bool top_process_has_ns_pid(json_t *process);
/* Widens *l for one Process object (escaped for a terminal that reads UTF-8 when utf8). */
void top_layout_add(TopLayout *l, json_t *process, bool utf8);
/* The layout of a view's rows: that of their processes, none for group rows, which have a
 * column of their key instead; the major causes where a row's totals have one, or the rows are
 * sorted by one (then shown whatever they hold, "-" where not counted); %STALL where a row's
 * totals know the stall (zero or not: the kernel keeps delay accounting), or the rows are sorted
 * by it. */
void top_rows_layout(const TopRow *rows, size_t n, TopGroup g, const SortKey *sort, bool utf8, TopLayout *ret);
/* Whether the daemon counts major faults by cause, as far as the table's rows tell: one's totals
 * know them (an older daemon sends none; one that cannot tell, null). */
bool top_table_knows_major_causes(const TopTable *t);
/* Whether the daemon's kernel keeps delay accounting, as far as the table's rows tell: one's
 * totals know the stall (null while it keeps none; an older daemon sends no member). */
bool top_table_knows_stall(const TopTable *t);
/* The Stall of a Counters object: 0 and *ret; -ENODATA where it is null or missing (not counted);
 * -EBADMSG where it is malformed. */
int top_counters_stall(json_t *counters, Stall *ret);
/* A process's NSPID cell: its nsPid, "-" when it has none; buf 24 bytes. */
const char *top_ns_pid_cell(json_t *process, char buf[static 24]);
/* A process's CONTAINER cell: its key, escaped, cut and padded to width columns (0: whole, not
 * padded). 0 or -ENOMEM. */
int top_container_cell(json_t *process, bool utf8, size_t width, char **ret);
