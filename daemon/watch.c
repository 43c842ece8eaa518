/* SPDX-License-Identifier: MIT */
#include "watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "traps.h"
#include "varlink.h"

static bool sample_counted(const ProcessSample *s) {
        return !faults_is_zero(&s->delta) || !fault_time_is_zero(&s->fault_time) || !stall_is_zero(&s->stall) ||
               (s->traps && !traps_is_zero(s->traps));
}

static uint64_t sample_key(const ProcessSample *s, const SortKey *key) {
        switch (key->what) {
        case SORT_TRAPS:
                return s->traps ? traps_total(s->traps) : 0;
        case SORT_FAULT_TIME:
                return fault_time_total_ns(&s->fault_time);
        case SORT_STALL:
                return stall_memory_ns(&s->stall);
        default:
                return faults_get(&s->delta, key->field);
        }
}

typedef struct SortItem {
        const ProcessSample *sample;
        uint64_t key;
} SortItem;

static int sort_item_compare(const void *a, const void *b) {
        const SortItem *x = a, *y = b;

        if (x->key != y->key)
                return x->key < y->key ? 1 : -1;
        return x->sample->process->pid < y->sample->process->pid ? -1 : x->sample->process->pid > y->sample->process->pid;
}

/* An exited process as the caller knows it: its pid there. */
typedef struct ExitedItem {
        uint32_t pid;
        uint64_t start_time;
} ExitedItem;

static int exited_compare(const void *a, const void *b) {
        const ExitedItem *x = a, *y = b;

        return process_identity_compare(x->pid, x->start_time, y->pid, y->start_time);
}

/* p's pid as the caller knows it: in its pid namespace (filter pidns), or as it is. */
static uint32_t view_pid(const WatchFilter *f, const ProcessInfo *p) {
        uint32_t pid = p->pid;

        if (f->process.pidns)
                (void) process_info_pid_in(p, f->process.pidns, &pid);
        return pid;
}

static bool watch_filter_match(const WatchFilter *f, const ProcessInfo *p) {
        uint32_t pid = p->pid;

        /* A caller in a pid namespace sees its processes, and names them by its pids. */
        if (f->process.pidns && !process_info_pid_in(p, f->process.pidns, &pid))
                return false;
        if (f->pid && pid != f->pid)
                return false;
        if (f->uid >= 0 && p->uid != (uint64_t) f->uid)
                return false;
        return process_filter_match(&f->process, pid, p->uid, p->unit, p->comm) &&
               process_filter_match_container(&f->process, p->container);
}

/* The "exited" member: {pid, startTime} of each process, in pid order (as the caller knows them). */
static json_t *exited_to_json(const WatchFilter *f, const ProcessInfo **exited, size_t n) {
        _cleanup_free_ ExitedItem *items = calloc(n ? n : 1, sizeof(*items));
        _cleanup_json_ json_t *list = json_array();

        if (!list || !items)
                return NULL;
        for (size_t i = 0; i < n; i++)
                items[i] = (ExitedItem) { view_pid(f, exited[i]), exited[i]->start_time };
        qsort(items, n, sizeof(*items), exited_compare);
        for (size_t i = 0; i < n; i++) {
                json_t *e = json_pack("{s:I, s:I}", "pid", (json_int_t) items[i].pid, "startTime",
                                      (json_int_t) items[i].start_time);

                if (!e || json_array_append_new(list, e) < 0)
                        return NULL;
        }
        return TAKE_PTR(list);
}

json_t *watch_reply_build(const ProcessSample *samples, size_t n, const WatchFilter *filter, uint64_t time_usec,
                          uint64_t interval_usec, uint64_t missed_ticks, FaultsKnown faults_known) {
        _cleanup_free_ SortItem *items = calloc(n ? n : 1, sizeof(*items));
        _cleanup_free_ const ProcessInfo **exited = calloc(n ? n : 1, sizeof(*exited));
        _cleanup_json_ json_t *rows = json_array(), *exited_list = NULL;
        Faults total = {};
        FaultTime total_time = {};
        Traps total_traps = {};
        Stall total_stall = {};
        size_t m = 0, n_exited = 0;

        if (!items || !exited || !rows)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const ProcessSample *s = &samples[i];

                if (!watch_filter_match(filter, s->process))
                        continue;
                if (s->process->exited)
                        exited[n_exited++] = s->process;
                if (!sample_counted(s))
                        continue;
                faults_add(&total, &s->delta);
                fault_time_add(&total_time, &s->fault_time);
                stall_add(&total_stall, &s->stall);
                if (s->traps)
                        traps_add(&total_traps, s->traps);
                items[m++] = (SortItem) { s, sample_key(s, &filter->sort) };
        }
        qsort(items, m, sizeof(*items), sort_item_compare);

        for (size_t i = 0; i < m && i < filter->limit; i++) {
                static const Traps no_traps;
                const ProcessSample *s = items[i].sample;
                json_t *process = process_info_to_json_as(s->process, view_pid(filter, s->process));
                json_t *row = json_pack("{s:o, s:o}", "process", process, "counters",
                                        counters_to_json(&s->delta, &s->fault_time, &s->stall, s->traps ?: &no_traps,
                                                         faults_known));

                if (!row || json_array_append_new(rows, row) < 0)
                        return NULL;
        }
        exited_list = exited_to_json(filter, exited, n_exited);
        if (!exited_list)
                return NULL;
        return json_pack("{s:I, s:I, s:o, s:I, s:O, s:I, s:O}", "timeUsec", (json_int_t) time_usec, "intervalUsec",
                         (json_int_t) interval_usec, "total",
                         counters_to_json(&total, &total_time, &total_stall, &total_traps, faults_known), "processes",
                         (json_int_t) m, "rows", rows, "missedTicks", (json_int_t) missed_ticks, "exited", exited_list);
}

typedef struct Watcher Watcher;
struct Watcher {
        WatchSet *set;
        Watcher *prev, *next;
        VarlinkCall *call;
        WatchFilter filter;
        uint64_t missed; /* ticks skipped since the last reply sent */
};

struct WatchSet {
        Watcher *watchers;
        size_t n;
        FaultsKnown faults_known; /* watch_set_set_faults_known() */
};

static void watcher_free(Watcher *w) {
        if (w->prev)
                w->prev->next = w->next;
        else
                w->set->watchers = w->next;
        if (w->next)
                w->next->prev = w->prev;
        w->set->n--;
        varlink_call_unref(w->call);
        process_filter_done(&w->filter.process);
        free(w);
}

/* The client went away. */
static void on_call_close(VarlinkCall *call _unused_, void *userdata) {
        watcher_free(userdata);
}

int watch_set_new(WatchSet **ret) {
        WatchSet *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->faults_known = FAULTS_KNOWN_ALL;
        *ret = w;
        return 0;
}

void watch_set_set_faults_known(WatchSet *w, FaultsKnown faults_known) {
        w->faults_known = faults_known;
}

WatchSet *watch_set_free(WatchSet *w) {
        if (!w)
                return NULL;
        while (w->watchers)
                watcher_free(w->watchers);
        free(w);
        return NULL;
}

int watch_set_add(WatchSet *w, VarlinkCall *call, const WatchFilter *filter) {
        Watcher *x = calloc(1, sizeof(*x));
        int r;

        if (!x)
                return -ENOMEM;
        x->filter = *filter;
        x->filter.process.unit = x->filter.process.comm = x->filter.process.container = NULL;
        if ((filter->process.unit && !(x->filter.process.unit = strdup(filter->process.unit))) ||
            (filter->process.comm && !(x->filter.process.comm = strdup(filter->process.comm))) ||
            (filter->process.container && !(x->filter.process.container = strdup(filter->process.container)))) {
                r = -ENOMEM;
                goto fail;
        }
        r = varlink_call_keep(call, on_call_close, x, &x->call);
        if (r < 0)
                goto fail;
        x->set = w;
        x->next = w->watchers;
        if (x->next)
                x->next->prev = x;
        w->watchers = x;
        w->n++;
        return 0;
fail:
        process_filter_done(&x->filter.process);
        free(x);
        return r;
}

void watch_set_broadcast(WatchSet *w, const ProcessSample *samples, size_t n, uint64_t time_usec,
                         uint64_t interval_usec) {
        Watcher *next;

        for (Watcher *x = w->watchers; x; x = next) {
                json_t *reply;
                int r;

                next = x->next;
                /* The client has not taken the last reply yet: it misses this one rather than
                 * making us queue without bound. */
                if (varlink_call_queued_bytes(x->call) > 0) {
                        x->missed++;
                        continue;
                }
                reply = watch_reply_build(samples, n, &x->filter, time_usec, interval_usec, x->missed, w->faults_known);
                if (!reply) {
                        x->missed++;
                        continue;
                }
                r = varlink_call_reply(x->call, reply, true);
                if (r < 0) {
                        log_debug_errno(r, "Failed to send a Watch reply, ending the stream: %m");
                        watcher_free(x);
                        continue;
                }
                x->missed = 0;
        }
}

size_t watch_set_size(WatchSet *w) {
        return w ? w->n : 0;
}
