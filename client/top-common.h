/* SPDX-License-Identifier: MIT */
#pragma once

/* What trapstat top's two views share (top-common.c): the options (top.c parses them), what the
 * batch mode and the stream (top.c) and the live view (top-live.c) both call; what they both
 * print is top-format.h's. */

#include <stdbool.h>
#include <stdint.h>

#include "counters.h"
#include "filter.h"
#include "top-format.h"
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
