/* SPDX-License-Identifier: MIT */
/* What both views of trapstat top use, the batch mode and the stream (top.c) and the live view
 * (top-live.c), so that the live view needs nothing of top.c: the rate columns and how a header,
 * a row and the "all:" line are written, the Top call and the Watch stream as both make them, and
 * a user and a unit as top.c's -u and --unit and the live view's filter prompt both read them. */
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
#include "output.h"
#include "time-util.h"

const TopColumn top_columns[5] = {
        { "user", "USER/s", 'u' },
        { "kernel", "KERNEL/s", 'k' },
        { "major", "MAJOR/s", 'm' },
        { "traps", "TRAPS/s", 't' },
        /* Time in faults per second of wall time, as top shows %CPU: 100 is one thread always
         * waiting on a fault. */
        { SORT_KEY_FAULT_TIME_NAME, "%FAULT", 'w' },
};

int top_column_of(const SortKey *sort) {
        for (size_t i = 0; i < ELEMENTSOF(top_columns); i++)
                if (strcmp(top_columns[i].sort, sort->name) == 0)
                        return (int) i;
        return -1;
}

static double per_sec(uint64_t n, uint64_t interval_usec) {
        return interval_usec ? (double) n * (double) USEC_PER_SEC / (double) interval_usec : 0.0;
}

/* Process rows: PID [NSPID] S COMM, then the rates; group rows: PROCS S, then the rates. The
 * last column: [CONTAINER] UNIT, or the group's key. */
#define PROCESS_LEAD "%7s %c %-15s"
#define NS_PROCESS_LEAD "%7s %7s %c %-15s"
#define GROUP_LEAD "%7s %c"
#define RATES " %9s %9s %9s %9s %9s %9s %7s  %-20s %s"

void top_format_header(char *buf, size_t size, const SortKey *sort, TopGroup g, const TopLayout *layout, bool marks,
                       int *ret_sorted_x) {
        char cells[ELEMENTSOF(top_columns)][16], key[16] = "", last[64];
        int sorted = top_column_of(sort), lead;

        for (size_t i = 0; i < ELEMENTSOF(top_columns); i++)
                snprintf(cells[i], sizeof(cells[i]), "%s%s", marks && (int) i == sorted ? "*" : "", top_columns[i].title);
        if (g != TOP_GROUP_PROCESS)
                lead = snprintf(buf, size, GROUP_LEAD, "PROCS", 'S');
        else if (layout->ns_pid)
                lead = snprintf(buf, size, NS_PROCESS_LEAD, "PID", "NSPID", 'S', "COMM");
        else
                lead = snprintf(buf, size, PROCESS_LEAD, "PID", 'S', "COMM");
        for (size_t i = 0; g != TOP_GROUP_PROCESS && i < sizeof(key) - 1 && top_group_name(g)[i]; i++)
                key[i] = (char) (top_group_name(g)[i] - 'a' + 'A'), key[i + 1] = '\0';
        if (g != TOP_GROUP_PROCESS)
                snprintf(last, sizeof(last), "%s", key);
        else
                snprintf(last, sizeof(last), "%-*s%sUNIT", (int) layout->container_width,
                         layout->container_width ? "CONTAINER" : "", layout->container_width ? " " : "");
        if (lead >= 0 && (size_t) lead < size)
                snprintf(buf + lead, size - (size_t) lead, RATES, cells[0], cells[1], cells[2], cells[3], cells[4],
                         "FAULTS", "TRAPS", "VECTORS", last);
        *ret_sorted_x = sorted >= 0 ? lead + 1 + sorted * 10 : -1;
}

/* The first columns of a row: PID [NSPID] S COMM, or PROCS S. malloc'd in *ret. */
static int format_lead(const TopRow *r, TopGroup g, const TopLayout *layout, char state, bool utf8, char **ret) {
        _cleanup_free_ char *comm_cell = NULL;
        char pid[24], ns_pid[24];

        if (g != TOP_GROUP_PROCESS) {
                snprintf(pid, sizeof(pid), "%zu", r->processes);
                return asprintf(ret, GROUP_LEAD, pid, state) < 0 ? -ENOMEM : 0;
        }
        snprintf(pid, sizeof(pid), "%" PRId64, r->pid);
        if (format_cell(json_string_value(json_object_get(r->process, "comm")) ?: "?", utf8, 15, 15, &comm_cell) < 0)
                return -ENOMEM;
        if (layout->ns_pid)
                return asprintf(ret, "%7s %7s %c %s", pid, top_ns_pid_cell(r->process, ns_pid), state, comm_cell) < 0
                               ? -ENOMEM : 0;
        return asprintf(ret, "%7s %c %s", pid, state, comm_cell) < 0 ? -ENOMEM : 0;
}

/* The last column of a row: [CONTAINER] UNIT, or the group's key; escaped. malloc'd in *ret. */
static int format_last(const TopRow *r, TopGroup g, const TopLayout *layout, bool utf8, char **ret) {
        _cleanup_free_ char *unit = NULL, *container = NULL;

        if (g != TOP_GROUP_PROCESS)
                return escape_untrusted(r->key ?: "-", utf8, ret);
        if (escape_untrusted(json_string_value(json_object_get(r->process, "unit")) ?: "-", utf8, &unit) < 0)
                return -ENOMEM;
        if (layout->container_width == 0) {
                *ret = TAKE_PTR(unit);
                return 0;
        }
        if (top_container_cell(r->process, utf8, layout->container_width, &container) < 0 ||
            asprintf(ret, "%s %s", container, unit) < 0)
                return -ENOMEM;
        return 0;
}

int top_format_row(const TopRow *r, TopGroup g, const TopLayout *layout, uint64_t interval, char state, bool utf8,
                   char **ret) {
        char user[16], kernel[16], major[16], traps[16], time[16], faults[16], total_traps[16], vectors[64];
        _cleanup_free_ char *lead = NULL, *last = NULL;

        if (format_lead(r, g, layout, state, utf8, &lead) < 0 || format_last(r, g, layout, utf8, &last) < 0)
                return -ENOMEM;
        /* The vectors of the totals: a trap seen minutes ago still says which it was. */
        format_busiest(r->total.vectors, 2, 1.0, vectors, sizeof(vectors));
        if (asprintf(ret, "%s" RATES, lead, format_rate(per_sec(r->last.faults.user, interval), user),
                     format_rate(per_sec(r->last.faults.kernel, interval), kernel),
                     format_rate(per_sec(r->last.faults.major, interval), major),
                     format_rate(per_sec(r->last.traps, interval), traps),
                     format_share(per_sec(r->last.time_ns, interval) / 1e9, time),
                     format_count(r->total.faults.user + r->total.faults.kernel, faults),
                     format_count(r->total.traps, total_traps), vectors[0] ? vectors : "-", last) < 0)
                return -ENOMEM;
        return 0;
}

void top_format_summary(char *buf, size_t size, const TopTable *t) {
        char user[16], kernel[16], minor[16], major[16], traps[16];
        const TopCounts *a = &t->all_last;

        snprintf(buf, size, "all: user %s/s  kernel %s/s  minor %s/s  major %s/s  traps %s/s  %" PRIu64 " process%s%s",
                 format_rate(per_sec(a->faults.user, t->interval_usec), user),
                 format_rate(per_sec(a->faults.kernel, t->interval_usec), kernel),
                 format_rate(per_sec(a->faults.minor, t->interval_usec), minor),
                 format_rate(per_sec(a->faults.major, t->interval_usec), major),
                 format_rate(per_sec(a->traps, t->interval_usec), traps), t->processes, t->processes == 1 ? "" : "es",
                 t->missed ? "  (ticks missed: reading too slowly)" : "");
}

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
