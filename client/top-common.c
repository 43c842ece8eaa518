/* SPDX-License-Identifier: MIT */
/* What both views of trapstat top use, the batch mode and the stream (top.c) and the live view
 * (top-live.c), so that the live view needs nothing of top.c: the Top call and the Watch stream
 * as both make them, and a user and a unit as top.c's -u and --unit and the live view's filter
 * prompt both read them. How both write their tables is top-format.c's. */
#include "top-common.h"

#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json-util.h"
#include "macro.h"
#include "time-util.h"

int top_parse_user(const char *text, int64_t *ret) {
        struct passwd pw, *result = NULL;
        char scratch[1024];
        uint64_t uid;

        if (getpwnam_r(text, &pw, scratch, sizeof(scratch), &result) == 0 && result) {
                *ret = result->pw_uid;
                return 0;
        }
        if (parse_integer(text, 0, UINT32_MAX - 1, 0, &uid) == 0) {
                *ret = (int64_t) uid;
                return 0;
        }
        return -EINVAL;
}

int top_watch_start(TrapstatClient *c, const SortKey *sort, const ProcessFilter *filter, unsigned limit) {
        if (!sort || !sort->name)
                return -EINVAL;
        return trapstat_watch(c, &(TrapstatWatchRequest) { .sort_by = sort->name, .limit = limit, .filter = filter });
}

int top_watch_open(const SortKey *sort, const ProcessFilter *filter, unsigned limit, uint64_t timeout_usec,
                   TrapstatClient **ret) {
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        int r;

        r = trapstat_client_connect(arg_socket, timeout_usec, &c);
        if (r < 0)
                return r;
        r = top_watch_start(c, sort, filter, limit);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

int top_call_top(TrapstatClient *c, const ProcessFilter *filter, const SortKey *sort, uint64_t window_usec, long long limit,
                 TrapstatTopReply *ret, TrapstatError *ret_error) {
        TrapstatTopRequest q = {
                .window_sec = window_usec / USEC_PER_SEC,
                .sort_by = sort->name,
                .limit = (unsigned) limit,
                .filter = filter,
        };

        return trapstat_top(c, &q, ret, ret_error);
}

char *top_unit_glob(const char *text) {
        char *v;

        if (strchr(text, '.') || strpbrk(text, "*?["))
                return strdup(text);
        if (asprintf(&v, "%s.service", text) < 0)
                return NULL;
        return v;
}
