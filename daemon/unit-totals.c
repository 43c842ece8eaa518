/* SPDX-License-Identifier: MIT */
#include "unit-totals.h"

#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "macro.h"
#include "json-util.h"

/* One series: a unit's processes of one uid. Kept per uid so that an unprivileged caller is
 * given the totals of their own processes only; the uids are summed when a query is made. */
typedef struct Entry {
        const char *unit; /* NULL: no unit; else a name in UnitTotals.names, or UNIT_TOTALS_OTHER */
        uint32_t uid;
        uint64_t processes;
        Faults faults;
        FaultTime fault_time;
        Stall stall;
        Traps traps;
} Entry;

/* A process alive as far as we know, and the series it was last counted in. */
typedef struct Proc {
        uint32_t pid;
        uint64_t start_time;
        Entry *entry;
} Proc;

struct UnitTotals {
        size_t max_units;
        void *names;       /* tsearch() tree of the unit names kept (malloc'd strings) */
        size_t n_names;
        bool overflowed;   /* a unit went to UNIT_TOTALS_OTHER */
        void *entries;     /* tsearch() tree of Entry by (unit, uid) */
        Entry **list;      /* the same entries, for queries; never shrinks */
        size_t n_list, size_list;
        void *procs;       /* tsearch() tree of Proc by (pid, start_time) */
};

/* NULL (no unit) sorts first. Names are compared by content; UNIT_TOTALS_OTHER, being no
 * unit name, can be compared as one. */
static int unit_cmp(const char *a, const char *b) {
        if (!a || !b)
                return (a != NULL) - (b != NULL);
        return strcmp(a, b);
}

static int entry_cmp(const void *x, const void *y) {
        const Entry *a = x, *b = y;
        int r = unit_cmp(a->unit, b->unit);

        return r ?: (a->uid > b->uid) - (a->uid < b->uid);
}

static int proc_cmp(const void *x, const void *y) {
        const Proc *a = x, *b = y;

        if (a->pid != b->pid)
                return a->pid < b->pid ? -1 : 1;
        return (a->start_time > b->start_time) - (a->start_time < b->start_time);
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(a, b);
}

int unit_totals_new(size_t max_units, UnitTotals **ret) {
        UnitTotals *t;

        if (max_units == 0)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->max_units = max_units;
        *ret = t;
        return 0;
}

static void noop_free(void *p _unused_) {
}

UnitTotals *unit_totals_free(UnitTotals *t) {
        if (!t)
                return NULL;
        /* The entries are owned by list, the names by their tree. */
        tdestroy(t->entries, noop_free);
        tdestroy(t->procs, free);
        tdestroy(t->names, free);
        for (size_t i = 0; i < t->n_list; i++)
                free(t->list[i]);
        free(t->list);
        free(t);
        return NULL;
}

bool unit_totals_overflowed(const UnitTotals *t) {
        return t->overflowed;
}

/* The kept name for unit: found, added while there is room, else UNIT_TOTALS_OTHER. NULL stays
 * NULL (one series, always kept). -ENOMEM. */
static int unit_name(UnitTotals *t, const char *unit, const char **ret) {
        void *node;
        char *copy;

        if (!unit) {
                *ret = NULL;
                return 0;
        }
        node = tfind(unit, &t->names, name_cmp);
        if (node) {
                *ret = *(const char **) node;
                return 0;
        }
        if (t->n_names >= t->max_units) {
                t->overflowed = true;
                *ret = UNIT_TOTALS_OTHER;
                return 0;
        }
        copy = strdup(unit);
        if (!copy)
                return -ENOMEM;
        node = tsearch(copy, &t->names, name_cmp);
        if (!node) {
                free(copy);
                return -ENOMEM;
        }
        t->n_names++;
        *ret = copy;
        return 0;
}

static int entry_get(UnitTotals *t, const char *unit, uint32_t uid, Entry **ret) {
        Entry key = { .unit = unit, .uid = uid }, *e;
        void *node;
        int r;

        r = unit_name(t, unit, &key.unit);
        if (r < 0)
                return r;
        node = tfind(&key, &t->entries, entry_cmp);
        if (node) {
                *ret = *(Entry **) node;
                return 0;
        }
        /* Room first: once e is in the tree, it must be in the list too. */
        r = array_grow((void **) &t->list, &t->size_list, t->n_list, 1, sizeof(*t->list));
        if (r < 0)
                return r;
        e = malloc(sizeof(*e));
        if (!e)
                return -ENOMEM;
        *e = key;
        if (!tsearch(e, &t->entries, entry_cmp)) {
                free(e);
                return -ENOMEM;
        }
        t->list[t->n_list++] = e;
        *ret = e;
        return 0;
}

/* Counts the process in e unless it was counted there already; forgets it when it exited. */
static int proc_count(UnitTotals *t, const ProcessInfo *p, Entry *e) {
        Proc key = { .pid = p->pid, .start_time = p->start_time }, *proc;
        void *node = tfind(&key, &t->procs, proc_cmp);

        if (node) {
                proc = *(Proc **) node;
                /* Moved into another unit (a service manager's child execs after it moved). */
                if (proc->entry != e)
                        e->processes++;
                proc->entry = e;
        } else {
                e->processes++;
                if (!p->exited) {
                        proc = malloc(sizeof(*proc));
                        if (!proc)
                                return -ENOMEM;
                        *proc = (Proc) { .pid = p->pid, .start_time = p->start_time, .entry = e };
                        if (!tsearch(proc, &t->procs, proc_cmp)) {
                                free(proc);
                                return -ENOMEM;
                        }
                }
                return 0;
        }
        if (p->exited) {
                (void) tdelete(&key, &t->procs, proc_cmp);
                free(proc);
        }
        return 0;
}

int unit_totals_add(UnitTotals *t, const ProcessSample *samples, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const ProcessSample *s = &samples[i];
                Entry *e;
                int r;

                r = entry_get(t, s->process->unit, s->process->uid, &e);
                if (r < 0)
                        return r;
                faults_add(&e->faults, &s->delta);
                fault_time_add(&e->fault_time, &s->fault_time);
                stall_add(&e->stall, &s->stall);
                if (s->traps)
                        traps_add(&e->traps, s->traps);
                r = proc_count(t, s->process, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

uint64_t unit_totals_row_events(const UnitTotalsRow *row) {
        return row->faults.user + row->faults.kernel + traps_total(&row->traps);
}

static int row_cmp_unit(const void *x, const void *y) {
        return unit_cmp(((const UnitTotalsRow *) x)->unit, ((const UnitTotalsRow *) y)->unit);
}

static int row_cmp_events(const void *x, const void *y) {
        const UnitTotalsRow *a = x, *b = y;
        uint64_t ea = unit_totals_row_events(a), eb = unit_totals_row_events(b);

        if (ea != eb)
                return ea > eb ? -1 : 1;
        return unit_cmp(a->unit, b->unit);
}

int unit_totals_query(const UnitTotals *t, int64_t uid, UnitTotalsRow **ret_rows, size_t *ret_n) {
        UnitTotalsRow *rows;
        size_t n = 0, k = 0;

        rows = calloc(MAX(t->n_list, 1u), sizeof(*rows));
        if (!rows)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_list; i++) {
                const Entry *e = t->list[i];

                if (uid >= 0 && e->uid != (uint64_t) uid)
                        continue;
                rows[n++] = (UnitTotalsRow) { .unit = e->unit, .processes = e->processes, .faults = e->faults,
                                              .fault_time = e->fault_time, .stall = e->stall, .traps = e->traps };
        }
        /* One row per unit: the uids of a unit are next to each other once sorted by unit. */
        qsort(rows, n, sizeof(*rows), row_cmp_unit);
        for (size_t i = 0; i < n; i++) {
                if (k > 0 && unit_cmp(rows[k - 1].unit, rows[i].unit) == 0) {
                        rows[k - 1].processes += rows[i].processes;
                        faults_add(&rows[k - 1].faults, &rows[i].faults);
                        fault_time_add(&rows[k - 1].fault_time, &rows[i].fault_time);
                        stall_add(&rows[k - 1].stall, &rows[i].stall);
                        traps_add(&rows[k - 1].traps, &rows[i].traps);
                } else
                        rows[k++] = rows[i];
        }
        qsort(rows, k, sizeof(*rows), row_cmp_events);
        *ret_rows = rows;
        *ret_n = k;
        return 0;
}

json_t *unit_totals_reply_build(const UnitTotals *t, int64_t uid, size_t limit, uint64_t since_usec,
                                FaultsKnown faults_known) {
        _cleanup_free_ UnitTotalsRow *rows = NULL;
        Faults total = {};
        FaultTime total_time = {};
        Stall total_stall = {};
        Traps total_traps = {};
        json_t *units;
        size_t n;

        if (unit_totals_query(t, uid, &rows, &n) < 0)
                return NULL;
        units = json_array();
        for (size_t i = 0; units && i < n; i++) {
                faults_add(&total, &rows[i].faults);
                fault_time_add(&total_time, &rows[i].fault_time);
                stall_add(&total_stall, &rows[i].stall);
                traps_add(&total_traps, &rows[i].traps);
                if (i >= limit)
                        continue;
                /* Unit names are untrusted text, as a process's. */
                if (json_array_append_new(units, json_pack("{s:o, s:I, s:o}", "unit", text_to_json(rows[i].unit),
                                                           "processes", (json_int_t) rows[i].processes, "counters",
                                                           counters_to_json(&rows[i].faults, &rows[i].fault_time,
                                                                            &rows[i].stall, &rows[i].traps, faults_known))) < 0) {
                        json_decref(units);
                        units = NULL;
                }
        }
        if (!units)
                return NULL;
        return json_pack("{s:I, s:o, s:I, s:o}", "sinceUsec", (json_int_t) since_usec, "units", units, "otherUnits",
                         (json_int_t) (n > limit ? n - limit : 0), "total",
                         counters_to_json(&total, &total_time, &total_stall, &total_traps, faults_known));
}
