/* SPDX-License-Identifier: MIT */
#include "top-format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-util.h"
#include "macro.h"
#include "time-util.h"

const TopColumn top_columns[TOP_N_COLUMNS] = {
        { "user", "USER/s", 'u' },
        { "kernel", "KERNEL/s", 'k' },
        { "major", "MAJOR/s", 'm' },
        { "majorFile", "FILE/s", 'f' },
        { "majorAnon", "ANON/s", 'a' },
        { "majorShmem", "SHMEM/s", 's' },
        { "traps", "TRAPS/s", 't' },
        /* Time in faults per second of wall time, as top shows %CPU: 100 is one thread always
         * waiting on a fault. */
        { SORT_KEY_FAULT_TIME_NAME, "%FAULT", 'w' },
        /* Time waited on memory per second of wall time, as %FAULT: the kernel's delay
         * accounting, which sees what the fault events do not (direct reclaim, compaction). */
        { SORT_KEY_STALL_NAME, "%STALL", 'd' },
};

/* --sort's names beside the IDL's: shorter, as people type them. */
static const struct {
        const char *arg, *sort;
} sort_aliases[] = {
        { "time", SORT_KEY_FAULT_TIME_NAME },
        { "file", "majorFile" },
        { "anon", "majorAnon" },
        { "shmem", "majorShmem" },
};

int top_sort_from_arg(const char *arg, SortKey *ret) {
        for (size_t i = 0; arg && i < ELEMENTSOF(sort_aliases); i++)
                if (strcmp(arg, sort_aliases[i].arg) == 0)
                        return sort_key_from_name(sort_aliases[i].sort, ret);
        return sort_key_from_name(arg, ret);
}

int top_column_of(const SortKey *sort) {
        for (size_t i = 0; i < ELEMENTSOF(top_columns); i++)
                if (strcmp(top_columns[i].sort, sort->name) == 0)
                        return (int) i;
        return -1;
}

bool top_column_shown(size_t i, const TopLayout *layout) {
        SortKey key;

        if (i >= ELEMENTSOF(top_columns) || sort_key_from_name(top_columns[i].sort, &key) < 0)
                return false;
        if (key.what == SORT_STALL)
                return layout->stall;
        return !top_sort_is_major_cause(&key) || layout->major_causes;
}

int top_column_step(int col, int step, const TopLayout *layout) {
        if (col < 0)
                return 0;
        for (int i = col + step; i >= 0 && i < (int) ELEMENTSOF(top_columns); i += step)
                if (top_column_shown((size_t) i, layout))
                        return i;
        return col;
}

static double per_sec(uint64_t n, uint64_t interval_usec) {
        return interval_usec ? (double) n * (double) USEC_PER_SEC / (double) interval_usec : 0.0;
}

const char *top_format_stall_share(const Stall *stall, uint64_t interval_usec, char buf[static 16]) {
        if (!stall || interval_usec == 0)
                return "-";
        return format_share(per_sec(stall_memory_ns(stall), interval_usec) / 1e9, buf);
}

/* Process rows: PID [NSPID] S COMM, then the rates; group rows: PROCS S, then the rates. The
 * last columns: the totals of faults and traps, the vectors, then [CONTAINER] UNIT, or the
 * group's key. */
#define PROCESS_LEAD "%7s %c %-15s"
#define NS_PROCESS_LEAD "%7s %7s %c %-15s"
#define GROUP_LEAD "%7s %c"
#define RATE " %9s"
#define TOTALS " %9s %7s  %-20s %s"

void top_format_header(char *buf, size_t size, const SortKey *sort, TopGroup g, const TopLayout *layout, bool marks,
                       int *ret_sorted_x) {
        char key[16] = "", last[64];
        int sorted = top_column_of(sort), lead, used, sorted_x = -1;

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
        used = lead;
        for (size_t i = 0; i < ELEMENTSOF(top_columns) && used >= 0 && (size_t) used < size; i++) {
                char cell[16];

                if (!top_column_shown(i, layout))
                        continue;
                if ((int) i == sorted)
                        sorted_x = used + 1;
                snprintf(cell, sizeof(cell), "%s%s", marks && (int) i == sorted ? "*" : "", top_columns[i].title);
                used += snprintf(buf + used, size - (size_t) used, RATE, cell);
        }
        if (used >= 0 && (size_t) used < size)
                snprintf(buf + used, size - (size_t) used, TOTALS, "FAULTS", "TRAPS", "VECTORS", last);
        *ret_sorted_x = sorted_x;
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
                               ? -ENOMEM
                               : 0;
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

/* The cell of top_columns[i] in row r: its rate over the last refresh. */
static const char *rate_cell(size_t i, const TopRow *r, uint64_t interval, char buf[static 16]) {
        SortKey key;

        if (sort_key_from_name(top_columns[i].sort, &key) < 0)
                return "?";
        switch (key.what) {
        case SORT_TRAPS:
                return format_rate(per_sec(r->last.traps, interval), buf);
        case SORT_FAULT_TIME:
                return format_share(per_sec(r->last.time_ns, interval) / 1e9, buf);
        case SORT_STALL:
                /* As the faults below: not counted over the refresh, or ever in the view. */
                return top_format_stall_share(r->last.stall_unknown || r->total.stall_unknown ? NULL : &r->last.stall,
                                              interval, buf);
        default:
                /* Not counted over the refresh, or ever in the view (an idle row's last counts
                 * are zeros that know nothing): "-", never a false zero. */
                if (!faults_field_known(&r->last.faults, key.field, FAULTS_KNOWN_ALL) ||
                    !faults_field_known(&r->total.faults, key.field, FAULTS_KNOWN_ALL))
                        return "-";
                return format_rate(per_sec(faults_get(&r->last.faults, key.field), interval), buf);
        }
}

int top_format_row(const TopRow *r, TopGroup g, const TopLayout *layout, uint64_t interval, char state, bool utf8,
                   char **ret) {
        char rates[TOP_N_COLUMNS * 10 + 1] = "", faults[16], total_traps[16], vectors[64];
        _cleanup_free_ char *lead = NULL, *last = NULL;
        size_t used = 0;

        if (format_lead(r, g, layout, state, utf8, &lead) < 0 || format_last(r, g, layout, utf8, &last) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(top_columns); i++) {
                char cell[16];

                if (top_column_shown(i, layout) && used < sizeof(rates))
                        used += (size_t) snprintf(rates + used, sizeof(rates) - used, RATE,
                                                  rate_cell(i, r, interval, cell));
        }
        /* The vectors of the totals: a trap seen minutes ago still says which it was. */
        format_busiest(r->total.vectors, 2, 1.0, vectors, sizeof(vectors));
        if (asprintf(ret, "%s%s" TOTALS, lead, rates,
                     format_count(r->total.faults.user + r->total.faults.kernel, faults),
                     format_count(r->total.traps, total_traps), vectors, last) < 0)
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
