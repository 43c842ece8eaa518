/* SPDX-License-Identifier: MIT */
#include "top-table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "format-util.h"
#include "json-util.h"
#include "macro.h"

static const char *const group_names[_TOP_GROUP_MAX] = {
        [TOP_GROUP_PROCESS] = "process",
        [TOP_GROUP_UNIT] = "unit",
        [TOP_GROUP_COMM] = "comm",
        [TOP_GROUP_USER] = "user",
        [TOP_GROUP_CONTAINER] = "container",
};

const char *top_group_name(TopGroup g) {
        return g < _TOP_GROUP_MAX ? group_names[g] : NULL;
}

int top_group_from_name(const char *name, TopGroup *ret) {
        for (TopGroup g = 0; g < _TOP_GROUP_MAX; g++)
                if (strcmp(group_names[g], name) == 0) {
                        *ret = g;
                        return 0;
                }
        return -EINVAL;
}

static uint64_t json_u64(json_t *j) {
        return json_is_integer(j) && json_integer_value(j) > 0 ? (uint64_t) json_integer_value(j) : 0;
}

static void counts_done(TopCounts *c) {
        json_decref(c->vectors);
        *c = (TopCounts) {};
}

int top_counters_stall(json_t *counters, Stall *ret) {
        json_t *j = json_object_get(counters, "stall");

        /* Older daemons send no member; null: the kernel keeps no delay accounting. */
        if (!j || json_is_null(j))
                return -ENODATA;
        return stall_from_json(j, ret);
}

/* Adds a Counters object's faults, stall and traps. -EBADMSG when it has no Faults, or a
 * malformed member. */
static int counts_add_json(TopCounts *c, json_t *counters) {
        json_t *traps = json_object_get(counters, "traps"), *v;
        const char *vector;
        Faults faults;
        Stall stall;
        int r;

        if (faults_from_json(json_object_get(counters, "faults"), &faults) < 0)
                return -EBADMSG;
        faults_add(&c->faults, &faults);
        r = top_counters_stall(counters, &stall);
        if (r == -ENODATA)
                c->stall_unknown = true;
        else if (r < 0)
                return r;
        else
                stall_add(&c->stall, &stall);
        /* Older daemons measure no fault time. */
        if (json_object_get(counters, "faultTime")) {
                FaultTime time;

                if (fault_time_from_json(json_object_get(counters, "faultTime"), &time) < 0)
                        return -EBADMSG;
                c->time_ns += fault_time_total_ns(&time);
        }
        json_object_foreach (traps, vector, v) {
                uint64_t n = json_u64(v);

                if (n == 0)
                        continue;
                if (!c->vectors && !(c->vectors = json_object()))
                        return -ENOMEM;
                if (json_object_set_new(c->vectors, vector, json_integer_u64(n + json_u64(json_object_get(c->vectors, vector)))) < 0)
                        return -ENOMEM;
                c->traps += n;
        }
        return 0;
}

static int counts_add(TopCounts *c, const TopCounts *add) {
        const char *vector;
        json_t *v;

        faults_add(&c->faults, &add->faults);
        c->time_ns += add->time_ns;
        stall_add(&c->stall, &add->stall);
        c->stall_unknown = c->stall_unknown || add->stall_unknown;
        c->traps += add->traps;
        json_object_foreach (add->vectors, vector, v) {
                if (!c->vectors && !(c->vectors = json_object()))
                        return -ENOMEM;
                if (json_object_set_new(c->vectors, vector, json_integer_u64(json_u64(v) + json_u64(json_object_get(c->vectors, vector)))) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int counts_copy(const TopCounts *c, TopCounts *ret) {
        *ret = (TopCounts) { .faults = c->faults,
                             .time_ns = c->time_ns,
                             .stall = c->stall,
                             .stall_unknown = c->stall_unknown,
                             .traps = c->traps };
        if (c->vectors && !(ret->vectors = json_deep_copy(c->vectors)))
                return -ENOMEM;
        return 0;
}

/* The counts move: pending becomes last, pending starts over. */
static void counts_shift(TopCounts *last, TopCounts *pending) {
        counts_done(last);
        *last = *pending;
        *pending = (TopCounts) {};
}

static void row_done(TopRow *r) {
        json_decref(r->process);
        free(r->key);
        counts_done(&r->last);
        counts_done(&r->pending);
        counts_done(&r->total);
}

void top_rows_free(TopRow *rows, size_t n) {
        for (size_t i = 0; i < n; i++)
                row_done(&rows[i]);
        free(rows);
}

void top_table_init(TopTable *t, size_t max_rows, uint64_t keep_exited_usec) {
        *t = (TopTable) { .max_rows = max_rows ?: 1, .keep_exited_usec = keep_exited_usec };
}

void top_table_done(TopTable *t) {
        top_rows_free(t->rows, t->n_rows);
        counts_done(&t->all_last);
        counts_done(&t->all_pending);
        *t = (TopTable) {};
}

static TopRow *table_find(TopTable *t, int64_t pid, int64_t start_time) {
        for (size_t i = 0; i < t->n_rows; i++)
                if (t->rows[i].pid == pid && t->rows[i].start_time == start_time)
                        return &t->rows[i];
        return NULL;
}

/* The row of a Process object, added when there is none; NULL: -EBADMSG or -ENOMEM in *error. */
static TopRow *table_row_of(TopTable *t, json_t *process, int *error) {
        json_t *pid = json_object_get(process, "pid"), *start = json_object_get(process, "startTime");
        TopRow *r;

        if (!json_is_integer(pid) || !json_is_integer(start) || !json_is_object(process)) {
                *error = -EBADMSG;
                return NULL;
        }
        r = table_find(t, json_integer_value(pid), json_integer_value(start));
        if (!r) {
                if (array_grow((void **) &t->rows, &t->n_alloc, t->n_rows, 1, sizeof(TopRow)) < 0) {
                        *error = -ENOMEM;
                        return NULL;
                }
                r = &t->rows[t->n_rows++];
                *r = (TopRow) { .pid = json_integer_value(pid), .start_time = json_integer_value(start) };
        }
        /* The newest Process: its comm may have changed at an exec. */
        json_decref(r->process);
        r->process = json_incref(process);
        return r;
}

int top_table_seed(TopTable *t, json_t *top_reply) {
        json_t *rows = json_object_get(top_reply, "rows"), *row;
        size_t i;
        int r = 0;

        if (!json_is_array(rows))
                return -EBADMSG;
        json_array_foreach (rows, i, row) {
                json_t *p = json_object_get(row, "process");
                TopRow *tr = table_row_of(t, p, &r);

                if (!tr)
                        return r;
                r = counts_add_json(&tr->total, json_object_get(row, "counters"));
                if (r < 0)
                        return r;
                tr->last_active_usec = json_u64(json_object_get(p, "lastSeenUsec"));
                if (json_is_true(json_object_get(p, "exited"))) {
                        tr->exited = true;
                        tr->exited_usec = tr->last_active_usec;
                }
        }
        return 0;
}

int top_table_add_tick(TopTable *t, json_t *reply) {
        json_t *rows = json_object_get(reply, "rows"), *row, *exited = json_object_get(reply, "exited"), *e;
        uint64_t now;
        size_t i;
        int r = 0;

        if (!json_is_array(rows) || !json_is_integer(json_object_get(reply, "intervalUsec")))
                return -EBADMSG;
        now = json_u64(json_object_get(reply, "timeUsec"));
        r = counts_add_json(&t->all_pending, json_object_get(reply, "total"));
        if (r < 0)
                return r;
        t->pending_interval_usec += json_u64(json_object_get(reply, "intervalUsec"));
        t->pending_ticks++;
        t->time_usec = now;
        t->pending_missed += json_u64(json_object_get(reply, "missedTicks"));
        t->pending_processes = MAX(t->pending_processes, json_u64(json_object_get(reply, "processes")));

        json_array_foreach (rows, i, row) {
                json_t *counters = json_object_get(row, "counters");
                TopRow *tr = table_row_of(t, json_object_get(row, "process"), &r);

                if (!tr)
                        return r;
                r = counts_add_json(&tr->pending, counters);
                if (r >= 0)
                        r = counts_add_json(&tr->total, counters);
                if (r < 0)
                        return r;
                tr->last_active_usec = now;
        }
        /* An older trapstatd sends no exited list: rows are then kept until they are idle the
         * longest. */
        json_array_foreach (exited, i, e) {
                TopRow *tr = table_find(t, json_integer_value(json_object_get(e, "pid")),
                                        json_integer_value(json_object_get(e, "startTime")));

                if (tr && !tr->exited) {
                        tr->exited = true;
                        tr->exited_usec = now;
                }
        }
        return 0;
}

/* Who goes first when there are too many rows: exited before live, then idle the longest. */
static int compare_evict(const void *a, const void *b) {
        const TopRow *x = a, *y = b;

        if (x->exited != y->exited)
                return x->exited ? -1 : 1;
        if (x->last_active_usec != y->last_active_usec)
                return x->last_active_usec < y->last_active_usec ? -1 : 1;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int top_table_refresh(TopTable *t, uint64_t now_usec) {
        size_t kept = 0;

        for (size_t i = 0; i < t->n_rows; i++) {
                TopRow *r = &t->rows[i];

                if (r->pending.traps > 0)
                        r->trapped_refresh = t->refreshes + 1;
                counts_shift(&r->last, &r->pending);
                if (r->exited && r->exited_usec + t->keep_exited_usec < now_usec) {
                        row_done(r);
                        continue;
                }
                t->rows[kept++] = *r;
        }
        t->n_rows = kept;
        if (t->n_rows > t->max_rows) {
                qsort(t->rows, t->n_rows, sizeof(TopRow), compare_evict);
                for (size_t i = 0; i < t->n_rows - t->max_rows; i++)
                        row_done(&t->rows[i]);
                memmove(t->rows, t->rows + (t->n_rows - t->max_rows), t->max_rows * sizeof(TopRow));
                t->n_rows = t->max_rows;
        }

        counts_shift(&t->all_last, &t->all_pending);
        t->interval_usec = t->pending_interval_usec;
        t->ticks = t->pending_ticks;
        t->missed = t->pending_missed;
        t->processes = t->pending_processes;
        t->pending_interval_usec = t->pending_missed = t->pending_processes = 0;
        t->pending_ticks = 0;
        t->refreshes++;
        return 0;
}

bool top_row_trapped_recently(const TopTable *t, const TopRow *r, unsigned n) {
        return r->trapped_refresh > 0 && r->trapped_refresh + n > t->refreshes;
}

static uint64_t counts_key(const TopCounts *c, const SortKey *sort) {
        switch (sort->what) {
        case SORT_TRAPS:
                return c->traps;
        case SORT_FAULT_TIME:
                return c->time_ns;
        case SORT_STALL:
                /* Not counted sorts with none: its partial sum would be a false value. */
                return c->stall_unknown ? 0 : stall_memory_ns(&c->stall);
        default:
                return faults_get(&c->faults, sort->field);
        }
}

static int compare_rows(const void *a, const void *b, void *userdata) {
        const TopRow *x = a, *y = b;
        const SortKey *sort = userdata;
        uint64_t kx = counts_key(&x->last, sort), ky = counts_key(&y->last, sort);
        uint64_t fx = x->total.faults.user + x->total.faults.kernel, fy = y->total.faults.user + y->total.faults.kernel;

        if (kx != ky)
                return kx > ky ? -1 : 1;
        kx = counts_key(&x->total, sort);
        ky = counts_key(&y->total, sort);
        if (kx != ky)
                return kx > ky ? -1 : 1;
        if (fx != fy)
                return fx > fy ? -1 : 1;
        if (x->key && y->key)
                return strcmp(x->key, y->key);
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void top_rows_sort(TopRow *rows, size_t n, const SortKey *sort) {
        if (n > 1)
                qsort_r(rows, n, sizeof(TopRow), compare_rows, (void *) sort);
}

bool top_row_matches(const TopRow *r, const ProcessFilter *filter) {
        json_t *p = r->process;
        json_t *uid = json_object_get(p, "uid");

        return process_filter_match(filter, (uint32_t) r->pid, json_is_integer(uid) ? json_integer_value(uid) : -1,
                                    json_string_value(json_object_get(p, "unit")),
                                    json_string_value(json_object_get(p, "comm")));
}

char *top_container_key(json_t *c) {
        char *key = NULL;

        /* A container without a runtime is still one: "?:ID". */
        if (format_container_key(json_is_object(c) ? (json_string_value(json_object_get(c, "runtime")) ?: "?") : NULL,
                                 json_string_value(json_object_get(c, "id")),
                                 json_string_value(json_object_get(c, "name")), &key) < 0)
                return NULL;
        return key;
}

char *top_group_key(json_t *process, TopGroup g) {
        char user[32];

        switch (g) {
        case TOP_GROUP_CONTAINER:
                return top_container_key(json_object_get(process, "container"));
        case TOP_GROUP_UNIT:
                return strdup(json_string_value(json_object_get(process, "unit")) ?: "-");
        case TOP_GROUP_COMM:
                return strdup(json_string_value(json_object_get(process, "comm")) ?: "?");
        case TOP_GROUP_USER:
                return strdup(format_user(json_u64(json_object_get(process, "uid")), user));
        default:
                return NULL;
        }
}

/* A copy of a row, or a new group row from its first process. */
static int row_copy(const TopRow *r, TopRow *ret) {
        TopRow c = { .pid = r->pid,
                     .start_time = r->start_time,
                     .process = json_incref(r->process),
                     .last_active_usec = r->last_active_usec,
                     .trapped_refresh = r->trapped_refresh,
                     .exited = r->exited,
                     .exited_usec = r->exited_usec,
                     .processes = 1,
                     .exited_processes = r->exited };

        if ((r->key && !(c.key = strdup(r->key))) || counts_copy(&r->last, &c.last) < 0 || counts_copy(&r->total, &c.total) < 0) {
                row_done(&c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

static int group_add(TopRow *g, const TopRow *r) {
        g->processes++;
        g->exited_processes += r->exited;
        g->exited = g->exited && r->exited;
        g->last_active_usec = MAX(g->last_active_usec, r->last_active_usec);
        g->trapped_refresh = MAX(g->trapped_refresh, r->trapped_refresh);
        if (counts_add(&g->last, &r->last) < 0 || counts_add(&g->total, &r->total) < 0)
                return -ENOMEM;
        return 0;
}

int top_table_view(const TopTable *t, const ProcessFilter *filter, TopGroup g, const SortKey *sort, TopRow **ret,
                   size_t *ret_n) {
        TopRow *rows = calloc(MAX(t->n_rows, (size_t) 1), sizeof(TopRow));
        size_t n = 0;

        if (!rows)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_rows; i++) {
                const TopRow *r = &t->rows[i];
                _cleanup_free_ char *key = NULL;
                size_t k;

                if (!top_row_matches(r, filter))
                        continue;
                if (g == TOP_GROUP_PROCESS) {
                        if (row_copy(r, &rows[n]) < 0)
                                goto fail;
                        n++;
                        continue;
                }
                key = top_group_key(r->process, g);
                if (!key)
                        goto fail;
                for (k = 0; k < n; k++)
                        if (strcmp(rows[k].key, key) == 0)
                                break;
                if (k < n) {
                        if (group_add(&rows[k], r) < 0)
                                goto fail;
                        continue;
                }
                if (row_copy(r, &rows[n]) < 0)
                        goto fail;
                rows[n].pid = rows[n].start_time = -1;
                rows[n].key = TAKE_PTR(key);
                n++;
        }
        top_rows_sort(rows, n, sort);
        *ret = rows;
        *ret_n = n;
        return 0;
fail:
        top_rows_free(rows, n);
        return -ENOMEM;
}

bool top_process_has_ns_pid(json_t *process) {
        json_t *ns_pid = json_object_get(process, "nsPid");

        return json_is_integer(ns_pid) &&
               json_integer_value(ns_pid) != json_integer_value(json_object_get(process, "pid"));
}

void top_layout_add(TopLayout *l, json_t *process, bool utf8) {
        _cleanup_free_ char *cell = NULL;

        l->ns_pid = l->ns_pid || top_process_has_ns_pid(process);
        if (!json_is_object(json_object_get(process, "container")))
                return;
        /* Out of memory: the header's width, the cell cut to it. */
        l->container_width = MAX(l->container_width, strlen("CONTAINER"));
        if (top_container_cell(process, utf8, 0, &cell) >= 0)
                l->container_width = MAX(l->container_width, MIN(text_width(cell), (size_t) TOP_CONTAINER_WIDTH));
}

bool top_sort_is_major_cause(const SortKey *sort) {
        return sort->what == SORT_FAULTS && sort->field && sort->field->part == FAULTS_KNOWN_MAJOR_CAUSE;
}

/* A row's totals know the causes only when every reply that went into them did. */
static bool counts_know_major_causes(const TopCounts *c) {
        return !(c->faults.unknown & FAULTS_KNOWN_MAJOR_CAUSE);
}

bool top_table_knows_major_causes(const TopTable *t) {
        for (size_t i = 0; i < t->n_rows; i++)
                if (counts_know_major_causes(&t->rows[i].total))
                        return true;
        return false;
}

bool top_table_knows_stall(const TopTable *t) {
        for (size_t i = 0; i < t->n_rows; i++)
                if (!t->rows[i].total.stall_unknown)
                        return true;
        return false;
}

void top_rows_layout(const TopRow *rows, size_t n, TopGroup g, const SortKey *sort, bool utf8, TopLayout *ret) {
        TopLayout l = { .major_causes = top_sort_is_major_cause(sort), .stall = sort->what == SORT_STALL };

        for (size_t i = 0; i < n; i++) {
                const Faults *f = &rows[i].total.faults;

                if (g == TOP_GROUP_PROCESS)
                        top_layout_add(&l, rows[i].process, utf8);
                l.major_causes = l.major_causes || (counts_know_major_causes(&rows[i].total) &&
                                                    f->major_file + f->major_anon + f->major_shmem > 0);
                /* Unlike the causes, zeros are worth a column here: the kernel keeps the
                 * accounting, and that no process waited on memory is an answer. */
                l.stall = l.stall || !rows[i].total.stall_unknown;
        }
        *ret = l;
}

const char *top_ns_pid_cell(json_t *process, char buf[static 24]) {
        json_t *ns_pid = json_object_get(process, "nsPid");

        if (json_is_integer(ns_pid))
                snprintf(buf, 24, "%" JSON_INTEGER_FORMAT, json_integer_value(ns_pid));
        else
                snprintf(buf, 24, "-");
        return buf;
}

int top_container_cell(json_t *process, bool utf8, size_t width, char **ret) {
        _cleanup_free_ char *key = top_container_key(json_object_get(process, "container"));

        if (!key)
                return -ENOMEM;
        return format_cell(key, utf8, width, width ?: SIZE_MAX, ret);
}
