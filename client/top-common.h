/* SPDX-License-Identifier: MIT */
#pragma once

/* What trapstat top's two views share (top-common.c): the options (top.c parses them), what the
 * batch mode and the stream (top.c) and the live view (top-live.c) both print and call. */

#include <stdbool.h>
#include <stdint.h>

#include "counters.h"
#include "filter.h"
#include "top-table.h"
#include "trapstat-methods.h"

#define RECONNECT_NEVER UINT64_MAX

typedef struct TopOptions {
        bool batch, stream;
        long long iterations; /* -1: no end */
        uint64_t delay_usec;  /* 0: every tick (live) */
        uint64_t window_usec; /* -b: look-back; live: the seed, and how long exited rows stay */
        SortKey sort;
        long long limit;
        bool limit_set;
        ProcessFilter filter; /* -p, -u, --unit, --comm, --container */
        TopGroup group;
        uint64_t reconnect_timeout_usec; /* 0: exit when the daemon goes away; RECONNECT_NEVER */
} TopOptions;

/* The rate columns, in screen order, for the < and > keys and the header. */
typedef struct TopColumn {
        const char *sort;  /* Watch/Top sortBy */
        const char *title; /* column header */
        int key;           /* letter selecting it */
} TopColumn;

extern const TopColumn top_columns[5];
int top_column_of(const SortKey *sort);

/* The header of the rate table (per process, or per group of g), with the columns of layout
 * (top_rows_layout() of the rows under it); the sorted column marked with a '*' when marks is
 * set (no colors). *ret_sorted_x: where the sorted column starts, -1 if none is shown. */
void top_format_header(char *buf, size_t size, const SortKey *sort, TopGroup g, const TopLayout *layout, bool marks,
                       int *ret_sorted_x);
/* One row: rates of the last refresh over interval_usec, totals, vectors (totals), container
 * (as layout says) and unit, or the group key; untrusted text escaped (for a terminal that reads
 * UTF-8 when utf8). state is the S column. malloc'd in *ret. */
int top_format_row(const TopRow *r, TopGroup g, const TopLayout *layout, uint64_t interval_usec, char state, bool utf8,
                   char **ret);
/* The "all:" line of a table: rates of the last refresh over every process of the view. */
void top_format_summary(char *buf, size_t size, const TopTable *t);
/* Starts a Watch stream on c quietly (its errors come with the first read): 0 or a negative
 * errno. */
int top_watch_start(TrapstatClient *c, const SortKey *sort, const ProcessFilter *filter, unsigned limit);
/* The same on a new connection (to arg_socket, reads waiting at most timeout_usec) in *ret. */
int top_watch_open(const SortKey *sort, const ProcessFilter *filter, unsigned limit, uint64_t timeout_usec,
                   TrapstatClient **ret);
/* Top over the window for the filter on c, quietly: 0 and the reply; TRAPSTAT_ERROR_REPLY and
 * *ret_error; or a negative errno. */
int top_call_top(TrapstatClient *c, const ProcessFilter *filter, const SortKey *sort, uint64_t window_usec, long long limit,
                 TrapstatTopReply *ret, TrapstatError *ret_error);

/* A user name or a uid: -EINVAL when neither. */
int top_parse_user(const char *text, int64_t *ret);
/* A unit filter as typed: a name without a '.' and without glob characters gets ".service",
 * as systemctl does. malloc'd; NULL on ENOMEM. */
char *top_unit_glob(const char *text);
