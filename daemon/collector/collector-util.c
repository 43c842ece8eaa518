/* SPDX-License-Identifier: MIT */
#include "collector-util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "macro.h"
#include "proc-util.h"

_Static_assert(TS_N_SIGNALS == FAULT_SIGNALS && TS_N_SI_CODES == SI_CODE_SLOTS && TS_N_VECTORS == TRAP_VECTORS,
               "bpf/trapstat.h and common/traps.h agree on the trap layout");
_Static_assert(TS_FAULT_BUCKETS == FAULT_TIME_BUCKETS, "bpf/trapstat.h and common/fault-time.h agree on the buckets");
_Static_assert(TS_COMM_LEN == COMM_MAX, "bpf/trapstat.h and common/counters.h agree on the name length");

const char *const collector_source_names[_SOURCE_MAX] = {
        [SOURCE_PAGE_FAULT_USER] = "page_fault_user",
        [SOURCE_PAGE_FAULT_KERNEL] = "page_fault_kernel",
        [SOURCE_PERF_USER] = "perf_page_faults_user",
        [SOURCE_PERF_KERNEL] = "perf_page_faults_kernel",
        [SOURCE_SIGNAL_GENERATE] = "signal_generate",
        [SOURCE_PROCESS_EXIT] = "sched_process_exit",
        [SOURCE_PROCESS_EXEC] = "sched_process_exec",
        [SOURCE_TASK_ITERATOR] = "task_iterator",
        [SOURCE_PROC_STAT] = "proc_pid_stat",
        [SOURCE_FAULT_TIME] = "fault_time",
        [SOURCE_MAJOR_CAUSE] = "major_cause",
        [SOURCE_DELAY_ACCOUNTING] = "delay_accounting",
};

bool collector_source_off_by_default(int source) {
        return source == SOURCE_FAULT_TIME;
}

int collector_sources_parse(const char *list, bool disabled[static _SOURCE_MAX], const char **ret_unknown,
                            size_t *ret_unknown_len) {
        for (const char *p = list; p && *p;) {
                size_t len = strcspn(p, ",");
                bool found = false;

                for (int i = 0; i < _SOURCE_MAX; i++)
                        if (strlen(collector_source_names[i]) == len &&
                            strncmp(collector_source_names[i], p, len) == 0) {
                                disabled[i] = found = true;
                                break;
                        }
                if (!found && len > 0) {
                        if (ret_unknown)
                                *ret_unknown = p;
                        if (ret_unknown_len)
                                *ret_unknown_len = len;
                        return -EINVAL;
                }
                p += len + (p[len] == ',');
        }
        return 0;
}

int collector_sources_choose(const char *disable, const char *enable, SourceChoice choice[static _SOURCE_MAX],
                             char **ret_error) {
        const char *lists[2] = { disable, enable }, *options[2] = { "--disable-source", "--enable-source" };
        bool named[2][_SOURCE_MAX] = {};
        char *error = NULL;

        for (int l = 0; l < 2; l++) {
                const char *unknown;
                size_t len;

                if (collector_sources_parse(lists[l], named[l], &unknown, &len) < 0) {
                        if (asprintf(&error, "Unknown source '%.*s' in %s", (int) len, unknown, options[l]) < 0)
                                return -ENOMEM;
                        goto fail;
                }
        }
        for (int s = 0; s < _SOURCE_MAX; s++) {
                if (named[0][s] && named[1][s]) {
                        if (asprintf(&error, "Source '%s' is both in %s and %s", collector_source_names[s], options[0],
                                     options[1]) < 0)
                                return -ENOMEM;
                        goto fail;
                }
                choice[s] = named[0][s]                                          ? SOURCE_DISABLED
                            : collector_source_off_by_default(s) && !named[1][s] ? SOURCE_NOT_ENABLED
                                                                                 : SOURCE_USED;
        }
        return 0;
fail:
        if (ret_error)
                *ret_error = error;
        else
                free(error);
        return -EINVAL;
}

#define LOAD(member) dst->member = __atomic_load_n(&src->member, __ATOMIC_RELAXED)

static void times_load(const struct ts_fault_times *src, struct ts_fault_times *dst) {
        LOAD(minor_ns);
        LOAD(major_ns);
        LOAD(kernel_ns);
        for (size_t b = 0; b < TS_FAULT_BUCKETS; b++)
                LOAD(buckets[b]);
        for (size_t i = 0; i < 2; i++) {
                LOAD(max_ns[i]);
                LOAD(max_tick[i]);
        }
        for (size_t i = 0; i < TS_MAJOR_CAUSES; i++)
                LOAD(major_cause_ns[i]);
}

static void counts_load(const struct ts_counters *src, struct ts_counters *dst) {
        LOAD(user_faults);
        LOAD(kernel_faults);
        LOAD(fault_read);
        LOAD(fault_write);
        LOAD(fault_exec);
        LOAD(fault_protection);
        for (size_t i = 0; i < TS_MAJOR_CAUSES; i++)
                LOAD(major_cause[i]);
}

#undef LOAD

void counters_load(const struct ts_counters *src, const struct ts_fault_times *times, ProcCounters *dst) {
        *dst = (ProcCounters) {};
        counts_load(src, &dst->c);
        if (times)
                times_load(times, &dst->t);
}

void counters_sum(const ProcCounters *v, uint64_t tick, uint64_t *next_max, ProcCounters *sum) {
        unsigned i = tick & 1, j = (tick + 1) & 1;
        uint64_t ended = v->t.max_tick[i] == tick ? v->t.max_ns[i] : 0,
                 next = v->t.max_tick[j] == tick + 1 ? v->t.max_ns[j] : 0;

        sum->c.user_faults += v->c.user_faults;
        sum->c.kernel_faults += v->c.kernel_faults;
        sum->c.fault_read += v->c.fault_read;
        sum->c.fault_write += v->c.fault_write;
        sum->c.fault_exec += v->c.fault_exec;
        sum->c.fault_protection += v->c.fault_protection;
        sum->t.minor_ns += v->t.minor_ns;
        sum->t.major_ns += v->t.major_ns;
        sum->t.kernel_ns += v->t.kernel_ns;
        for (size_t b = 0; b < TS_FAULT_BUCKETS; b++)
                sum->t.buckets[b] += v->t.buckets[b];
        for (size_t c = 0; c < TS_MAJOR_CAUSES; c++) {
                sum->c.major_cause[c] += v->c.major_cause[c];
                sum->t.major_cause_ns[c] += v->t.major_cause_ns[c];
        }
        /* The longest of the faults counted now. Those of the tick that ended completed before the
         * flip; those that completed between the last read and the last flip were counted then,
         * and their longest reported then as that read's next (*next_max): the tick's longest
         * counts only if it grew past it. The next tick's so far completed after this flip and
         * are counted now too. */
        if (ended > *next_max)
                sum->t.max_ns[0] = MAX(sum->t.max_ns[0], ended);
        sum->t.max_ns[0] = MAX(sum->t.max_ns[0], next);
        *next_max = next;
}

Faults counters_delta(const ProcCounters *now, ProcCounters *seen, FaultTime *ret_time) {
        const struct ts_counters *c = &now->c, *cs = &seen->c;
        const struct ts_fault_times *t = &now->t, *ts = &seen->t;
        Faults d = {
                .user = c->user_faults - cs->user_faults,
                .kernel = c->kernel_faults - cs->kernel_faults,
                .read = c->fault_read - cs->fault_read,
                .write = c->fault_write - cs->fault_write,
                .exec = c->fault_exec - cs->fault_exec,
                .protection = c->fault_protection - cs->fault_protection,
                .major_file = c->major_cause[TS_MAJOR_FILE] - cs->major_cause[TS_MAJOR_FILE],
                .major_anon = c->major_cause[TS_MAJOR_ANON] - cs->major_cause[TS_MAJOR_ANON],
                .major_shmem = c->major_cause[TS_MAJOR_SHMEM] - cs->major_cause[TS_MAJOR_SHMEM],
        };
        FaultTime time = {
                .minor_ns = t->minor_ns - ts->minor_ns,
                .major_ns = t->major_ns - ts->major_ns,
                .kernel_ns = t->kernel_ns - ts->kernel_ns,
                .major_file_ns = t->major_cause_ns[TS_MAJOR_FILE] - ts->major_cause_ns[TS_MAJOR_FILE],
                .major_anon_ns = t->major_cause_ns[TS_MAJOR_ANON] - ts->major_cause_ns[TS_MAJOR_ANON],
                .major_shmem_ns = t->major_cause_ns[TS_MAJOR_SHMEM] - ts->major_cause_ns[TS_MAJOR_SHMEM],
        };

        for (size_t b = 0; b < TS_FAULT_BUCKETS; b++)
                time.histogram[b] = t->buckets[b] - ts->buckets[b];
        /* The longest is taken only with a fault timed in the tick: a maximum without a count
         * would be one of a fault counted in the tick before. */
        time.max_ns = fault_time_count(&time) > 0 ? t->max_ns[0] : 0;
        *seen = *now;
        *ret_time = time;
        return d;
}

_Static_assert((int) TS_STALLS == (int) _STALL_MAX, "bpf/trapstat.h and common/stall.h agree on the causes");
_Static_assert((int) TS_STALL_SWAPIN == (int) STALL_SWAPIN && (int) TS_STALL_BLKIO == (int) STALL_BLKIO,
               "in the same order");

/* One figure: what now grew by past *max, which becomes the larger. */
static uint64_t grew_past(uint64_t now, uint64_t *max) {
        uint64_t d = now > *max ? now - *max : 0;

        *max = MAX(*max, now);
        return d;
}

bool stall_account(StallSeen *seen, const struct ts_delays *now, Stall *delta) {
        bool grew = false;

        for (size_t i = 0; i < _STALL_MAX; i++) {
                if (seen->baseline) {
                        seen->max.ns[i] = now->ns[i];
                        seen->max.count[i] = now->count[i];
                        continue;
                }
                uint64_t ns = grew_past(now->ns[i], &seen->max.ns[i]), count = grew_past(now->count[i], &seen->max.count[i]);

                delta->ns[i] += ns;
                delta->count[i] += count;
                grew = grew || ns || count;
        }
        seen->baseline = false;
        return grew;
}

bool minmaj_account(MinMajSeen *seen, uint64_t minflt, uint64_t majflt, Faults *delta) {
        bool grew = false;

        if (seen->baseline) {
                seen->baseline = false;
                seen->minflt = minflt;
                seen->majflt = majflt;
                return false;
        }
        /* The kernel's counters only grow; guard anyway against a mismatched reading. */
        if (minflt > seen->minflt) {
                delta->minor += minflt - seen->minflt;
                seen->minflt = minflt;
                grew = true;
        }
        if (majflt > seen->majflt) {
                delta->major += majflt - seen->majflt;
                seen->majflt = majflt;
                grew = true;
        }
        return grew;
}

void traps_from_bpf(const struct ts_traps *t, Traps *ret) {
        memcpy(ret->vector, t->vector, sizeof(t->vector));
        ret->vector[TRAP_VECTOR_UNKNOWN] = t->vector_unknown;
        memcpy(ret->signal, t->signal, sizeof(t->signal));
}

bool traps_account(const Traps *cur, Traps *seen, Traps *delta) {
        bool any = false;

        for (size_t k = 0; k < ELEMENTSOF(cur->vector); k++) {
                delta->vector[k] += cur->vector[k] - seen->vector[k];
                any = any || cur->vector[k] != seen->vector[k];
        }
        for (size_t s = 0; s < FAULT_SIGNALS; s++)
                for (size_t k = 0; k < SI_CODE_SLOTS; k++) {
                        delta->signal[s][k] += cur->signal[s][k] - seen->signal[s][k];
                        any = any || cur->signal[s][k] != seen->signal[s][k];
                }
        *seen = *cur;
        return any;
}

int lifecycle_event_decode(const void *data, size_t size, LifecycleEvent *ret) {
        const struct ts_event_header *h = data;
        LifecycleEvent x;

        if (size < sizeof(*h))
                return -EBADMSG;
        x = (LifecycleEvent) { .type = h->type, .tgid = h->tgid, .start_time = h->start_time };
        if (h->type == TS_EVENT_EXIT && size >= sizeof(struct ts_exit_event)) {
                const struct ts_exit_event *e = data;

                x.min_flt = e->min_flt;
                x.maj_flt = e->maj_flt;
                x.delays = e->delays;
                x.uid = e->uid;
                memcpy(x.comm, e->comm, sizeof(x.comm) - 1);
        } else if (h->type == TS_EVENT_EXEC && size >= sizeof(struct ts_exec_event)) {
                const struct ts_exec_event *e = data;

                x.uid = e->uid;
                x.cgroup_id = e->cgroup_id;
                if (e->unit[0] != '\0')
                        x.unit = strndup(e->unit, sizeof(e->unit) - 1);
                memcpy(x.comm, e->comm, sizeof(x.comm) - 1);
                /* args_len comes from BPF: never trust it beyond the array. A full array may end
                 * inside a UTF-8 character. */
                (void) proc_cmdline_format(e->args, e->args_len > TS_ARGS_LEN ? TS_ARGS_LEN : e->args_len,
                                           e->args_len >= TS_ARGS_LEN, &x.cmdline);
        } else
                return -EBADMSG;
        *ret = x;
        return 0;
}

void lifecycle_event_done(LifecycleEvent *e) {
        free(e->cmdline);
        e->cmdline = NULL;
        free(e->unit);
        e->unit = NULL;
}

uint64_t dev_from_kernel(uint32_t dev) {
        return makedev(dev >> 20, dev & 0xfffff);
}

const char *file_path_visible(const char *path, uint64_t dev, uint64_t ino) {
        for (const char *p = path; p && *p == '/'; p = strchr(p + 1, '/')) {
                struct stat st;

                if (stat(p, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
                        return p;
        }
        return path;
}

char *file_name_join(const struct ts_file_name *n) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        if (n->truncated)
                fputs("...", f);
        for (uint32_t i = MIN(n->depth, (uint32_t) TS_PATH_DEPTH); i > 0; i--)
                fprintf(f, "/%.*s", TS_NAME_LEN, n->names[i - 1]);
        if (n->depth == 0)
                fputc('/', f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

int file_name_split(const char *path, struct ts_file_name *ret) {
        struct ts_file_name n = {};
        const char *end;

        if (path[0] != '/')
                return -EINVAL;
        /* From the innermost component outwards. */
        end = path + strlen(path);
        while (end > path) {
                const char *start = end;
                size_t len;

                while (start > path && start[-1] != '/')
                        start--;
                len = (size_t) (end - start);
                if (len > 0) {
                        if (n.depth == TS_PATH_DEPTH) {
                                n.truncated = 1;
                                break;
                        }
                        memcpy(n.names[n.depth], start, MIN(len, (size_t) TS_NAME_LEN - 1));
                        n.depth++;
                }
                if (start == path)
                        break;
                end = start - 1;
        }
        *ret = n;
        return 0;
}

static NameShare *name_share_of(NameShares *s, uint32_t uid) {
        /* Linear: the users whose processes have sites named this way are few. */
        for (size_t i = 0; i < s->n_users; i++)
                if (s->users[i].uid == uid)
                        return &s->users[i];
        return NULL;
}

int name_shares_charge(NameShares *s, uint32_t uid, size_t bytes, size_t max) {
        NameShare *u = name_share_of(s, uid);
        size_t held = u ? u->bytes : 0;

        if (uid == 0 ? s->total + bytes > max
                     : held + bytes > max / 4 || s->total + bytes > max - max / 8)
                return -E2BIG;
        if (!u) {
                if (s->n_users == s->capacity) {
                        size_t capacity = MAX(s->capacity * 2, (size_t) 8);
                        NameShare *n = reallocarray(s->users, capacity, sizeof(*n));

                        if (!n)
                                return -ENOMEM;
                        s->users = n;
                        s->capacity = capacity;
                }
                u = &s->users[s->n_users++];
                *u = (NameShare) { .uid = uid };
        }
        u->bytes += bytes;
        s->total += bytes;
        return 0;
}

void name_shares_release(NameShares *s, uint32_t uid, size_t bytes) {
        NameShare *u = name_share_of(s, uid);

        if (!u)
                return;
        bytes = MIN(bytes, u->bytes);
        u->bytes -= bytes;
        s->total -= MIN(bytes, s->total);
        if (u->bytes == 0)
                *u = s->users[--s->n_users];
}

void name_shares_done(NameShares *s) {
        free(s->users);
        *s = (NameShares) {};
}

int site_kind_from_bpf(uint8_t kind, uint32_t fault_sample, SiteKind *ret_kind, uint32_t *ret_period,
                       bool *ret_timed) {
        switch (kind) {
        case TS_SITE_TRAP:
                *ret_kind = SITE_TRAP;
                break;
        case TS_SITE_FAULT:
                *ret_kind = SITE_FAULT;
                break;
        case TS_SITE_MAJOR:
                *ret_kind = SITE_MAJOR;
                break;
        default:
                return -EBADMSG;
        }
        *ret_period = kind == TS_SITE_FAULT ? fault_sample : 1;
        *ret_timed = kind != TS_SITE_TRAP;
        return 0;
}

void pidns_from_ident(const struct ts_ident *id, ProcessInfo *p) {
        _Static_assert(PIDNS_LEVELS == TS_PIDNS_LEVELS, "ProcessInfo keeps the levels BPF reads");
        uint32_t n = MIN(id->n_pidns, (uint32_t) PIDNS_LEVELS);

        for (uint32_t i = 0; i < n; i++)
                p->pidns[i] = (PidNsPid) { .ns = id->pidns[i].ns, .pid = id->pidns[i].pid };
        p->n_pidns = n;
        p->pidns_level = id->pidns_level;
}
