/* SPDX-License-Identifier: MIT */
#pragma once

/* How trapstat top writes its rate tables (the live view, -b --stream) and reads --sort: the
 * rate columns, a header, a row, the "all:" line. Pure, no calls and no curses: unit-tested in
 * tests/unit/test-top-table.c with the table (top-table.h) it formats. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "top-table.h"

/* The rate columns, in screen order, for the < and > keys and the header. FILE/s, ANON/s and
 * SHMEM/s (major faults by cause) follow MAJOR/s, whose parts they are, where the layout shows
 * them (TopLayout.major_causes); %STALL (time waited on memory) follows %FAULT where the layout
 * shows it (TopLayout.stall). */
typedef struct TopColumn {
        const char *sort;  /* Watch/Top sortBy */
        const char *title; /* column header */
        int key;           /* letter selecting it */
} TopColumn;

#define TOP_N_COLUMNS 9
extern const TopColumn top_columns[TOP_N_COLUMNS];
/* The column of sort, -1 when it has none (minor, read, ...). */
int top_column_of(const SortKey *sort);
/* Whether top_columns[i] is shown under layout: a major cause's only with layout->major_causes,
 * %STALL only with layout->stall. */
bool top_column_shown(size_t i, const TopLayout *layout);
/* The column shown next to col in direction step (-1: left, 1: right); col itself at the edge;
 * the first column when col is -1 (the sort has no column). */
int top_column_step(int col, int step, const TopLayout *layout);

/* --sort's text: a SortKey's name as the IDL has it ("user", "majorFile", "faultTime", "stall"),
 * or the short names people type: "time" (faultTime), "file", "anon", "shmem" (majorFile,
 * majorAnon, majorShmem). 0 and *ret, or -EINVAL. */
int top_sort_from_arg(const char *arg, SortKey *ret);

/* The share of interval_usec a process waited on memory (stall_memory_ns(): swap-in, thrashing,
 * reclaim, compaction; not block I/O), as top shows %CPU and format_share() writes it: 250 ms
 * over 1 s is "25.0", several threads waiting can make it over 100. "-" where stall is NULL (not
 * counted) or the interval is 0 (a total over no set length). */
const char *top_format_stall_share(const Stall *stall, uint64_t interval_usec, char buf[static 16]);

/* The header of the rate table (per process, or per group of g), with the columns of layout
 * (top_rows_layout() of the rows under it); the sorted column marked with a '*' when marks is
 * set (no colors). *ret_sorted_x: where the sorted column starts, -1 if none is shown. */
void top_format_header(char *buf, size_t size, const SortKey *sort, TopGroup g, const TopLayout *layout, bool marks,
                       int *ret_sorted_x);
/* One row: rates of the last refresh over interval_usec ("-" for a Faults member the daemon did
 * not count, and for %STALL where the stall was not counted), totals, vectors (totals), container (as layout says) and unit, or the group key;
 * untrusted text escaped (for a terminal that reads UTF-8 when utf8). state is the S column.
 * malloc'd in *ret. */
int top_format_row(const TopRow *r, TopGroup g, const TopLayout *layout, uint64_t interval_usec, char state, bool utf8,
                   char **ret);
/* The "all:" line of a table: rates of the last refresh over every process of the view. */
void top_format_summary(char *buf, size_t size, const TopTable *t);
