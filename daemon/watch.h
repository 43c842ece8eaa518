/* SPDX-License-Identifier: MIT */
#pragma once

/* The Watch streams: varlink calls kept open, each answered once per tick with that tick's
 * counts, filtered by what the caller may see and sorted as it asked. */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "filter.h"

struct VarlinkCall;

/* What one Watch call asked for. */
typedef struct WatchFilter {
        SortKey sort;
        size_t limit;          /* rows per reply */
        uint32_t pid;          /* 0: every process; else only it, also with process.pids */
        int64_t uid;           /* < 0: every user's processes; else whom the caller may see */
        ProcessFilter process; /* pids, uid, unit and comm the caller asked for */
} WatchFilter;

/* Builds one Watch reply from a tick's samples (pure; unit-tested): the rows the filter lets
 * through that counted something, sorted descending by filter->sort (pid ascending on ties), at
 * most filter->limit, and the total over all of them; and, in pid order, the processes the
 * filter lets through that exited (ProcessInfo.exited: the collector reports a process in the
 * tick it retires it, with or without counts). Counters as counters_to_json(..., faults_known).
 * NULL on allocation failure. */
json_t *watch_reply_build(const ProcessSample *samples, size_t n, const WatchFilter *filter, uint64_t time_usec,
                          uint64_t interval_usec, uint64_t missed_ticks, FaultsKnown faults_known);

typedef struct WatchSet WatchSet;

int watch_set_new(WatchSet **ret);
/* Whether the replies' counters carry read / write / exec / protection
 * (collector_faults_known()); all until set. */
void watch_set_set_faults_known(WatchSet *w, FaultsKnown faults_known);
/* Ends every stream (their connections close) and frees the set. */
WatchSet *watch_set_free(WatchSet *w);
/* Keeps call (a Watch call with "more") and answers it on every tick from now on; with a copy
 * of filter (the caller keeps its strings). */
int watch_set_add(WatchSet *w, struct VarlinkCall *call, const WatchFilter *filter);
/* Sends the tick to every stream whose client has taken the previous reply; the others miss
 * it and are told how many they missed in their next reply. */
void watch_set_broadcast(WatchSet *w, const ProcessSample *samples, size_t n, uint64_t time_usec,
                         uint64_t interval_usec);
/* Streams open. Only fuzz-methods.c asks: it broadcasts a tick once a Watch call has its stream
 * (the set's private state). */
size_t watch_set_size(WatchSet *w);
