/* SPDX-License-Identifier: MIT */
#include "collector.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "proc-util.h"
#include "time-util.h"
#include "trapstat.h"
#include "trapstat.skel.h"

/* Longest command line kept per process. */
#define CMDLINE_MAX 4096
/* Map entries read per bpf_map_lookup_batch() call. */
#define BATCH_ENTRIES 1024

/* What user space knows about one tracked process. */
typedef struct CollectorProc {
        ProcessInfo info;
        struct ts_proc drained; /* counters already turned into deltas (summed over CPUs) */
        uint64_t minflt_seen;   /* the kernel's min_flt/maj_flt already reported */
        uint64_t majflt_seen;
        Faults delta;           /* this tick's */
        bool touched;           /* delta non-zero or exited: goes into this tick's samples */
} CollectorProc;

/* A lifecycle event from the ring buffer, kept until the map has been drained. */
typedef struct LifecycleEvent {
        uint32_t type; /* enum ts_event_type */
        uint32_t tgid;
        uint64_t start_time, min_flt, maj_flt;
        char comm[COMM_MAX];
        char *cmdline; /* exec: from the event's argument bytes, NULL when none */
} LifecycleEvent;

enum {
        SOURCE_PAGE_FAULT_USER,
        SOURCE_PAGE_FAULT_KERNEL,
        SOURCE_PROCESS_EXIT,
        SOURCE_PROCESS_EXEC,
        SOURCE_PROC_STAT,
        _SOURCE_MAX
};

struct Collector {
        struct trapstat_bpf *skel;
        struct bpf_link *links[_SOURCE_MAX]; /* attached programs; detached when destroyed */
        struct ring_buffer *ringbuf;
        int proc_fd;
        int n_cpus;
        long ticks_per_sec;          /* USER_HZ, the unit of /proc/PID/stat start time */
        uint64_t attached_boottime;  /* ns since boot when counting started */

        void *procs;                 /* tsearch() tree of CollectorProc, by pid */
        size_t n_procs;

        CollectorProc **touched;     /* this tick's */
        size_t n_touched, touched_capacity;
        CollectorProc **dead;        /* exited last tick: freed at the start of the next drain */
        size_t n_dead, dead_capacity;
        LifecycleEvent *events;      /* read from the ring buffer this tick */
        size_t n_events, events_capacity;
        ProcessSample *samples;
        size_t samples_capacity;

        uint32_t *batch_keys;
        struct ts_proc *batch_values; /* BATCH_ENTRIES * n_cpus */

        CollectorSource sources[_SOURCE_MAX];
        char reasons[_SOURCE_MAX][128];
};

static int proc_compare(const void *a, const void *b) {
        uint32_t x = ((const CollectorProc *) a)->info.pid, y = ((const CollectorProc *) b)->info.pid;
        return x < y ? -1 : x > y;
}

static void proc_free(void *p) {
        CollectorProc *proc = p;

        if (!proc)
                return;
        process_info_done(&proc->info);
        free(proc);
}

/* Appends to a pointer-or-struct array, doubling its capacity. */
static int append(void **array, size_t *n, size_t *capacity, size_t elem, const void *value) {
        if (*n >= *capacity) {
                size_t c = *capacity ? *capacity * 2 : 64;
                void *p = reallocarray(*array, c, elem);
                if (!p)
                        return -ENOMEM;
                *array = p;
                *capacity = c;
        }
        memcpy((char *) *array + *n * elem, value, elem);
        (*n)++;
        return 0;
}

static void events_clear(Collector *c) {
        for (size_t i = 0; i < c->n_events; i++)
                free(c->events[i].cmdline);
        c->n_events = 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        /* libbpf is chatty; its warnings matter, its debug output only when asked for. */
        if (level == LIBBPF_DEBUG && log_get_max_level() < LOG_LEVEL_DEBUG)
                return 0;
        return vfprintf(stderr, fmt, ap);
}

static int handle_event(void *ctx, void *data, size_t size) {
        Collector *c = ctx;
        const struct ts_event *e = data;
        LifecycleEvent x;
        int r;

        if (size < sizeof(*e) || (e->type != TS_EVENT_EXIT && e->type != TS_EVENT_EXEC))
                return 0;
        x = (LifecycleEvent) { .type = e->type, .tgid = e->tgid, .start_time = e->start_time,
                               .min_flt = e->min_flt, .maj_flt = e->maj_flt };
        memcpy(x.comm, e->comm, sizeof(x.comm) - 1);
        if (e->type == TS_EVENT_EXEC)
                (void) proc_cmdline_format(e->args, e->args_len > TS_ARGS_LEN ? TS_ARGS_LEN : e->args_len,
                                           e->args_len >= TS_ARGS_LEN, &x.cmdline);
        r = append((void **) &c->events, &c->n_events, &c->events_capacity, sizeof(x), &x);
        if (r < 0)
                free(x.cmdline);
        return r;
}

static void set_source(Collector *c, int i, const char *name, int error, const char *why) {
        c->sources[i].name = name;
        c->sources[i].active = error == 0;
        c->sources[i].reason = NULL;
        if (error != 0) {
                snprintf(c->reasons[i], sizeof(c->reasons[i]), "%s: %s", why, strerror(abs(error)));
                c->sources[i].reason = c->reasons[i];
        }
}

/* Each tracepoint is checked in the kernel's BTF before loading, so one the kernel lacks
 * (e.g. the x86 exception events elsewhere) turns into an inactive source, not a load failure. */
static bool kernel_has_tracepoint(const struct btf *vmlinux, const char *tp) {
        char name[128];

        snprintf(name, sizeof(name), "btf_trace_%s", tp);
        return vmlinux && btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) >= 0;
}

int collector_new(const CollectorConfig *config, Collector **ret) {
        static const struct {
                int source;
                const char *tracepoint;
        } programs[] = {
                { SOURCE_PAGE_FAULT_USER, "page_fault_user" },
                { SOURCE_PAGE_FAULT_KERNEL, "page_fault_kernel" },
                { SOURCE_PROCESS_EXIT, "sched_process_exit" },
                { SOURCE_PROCESS_EXEC, "sched_process_exec" },
        };
        struct bpf_program *progs[_SOURCE_MAX] = {};
        struct btf *vmlinux = NULL;
        Collector *c;
        int r;

        libbpf_set_print(libbpf_print);

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->proc_fd = config->proc_fd;
        c->ticks_per_sec = sysconf(_SC_CLK_TCK);
        c->n_cpus = libbpf_num_possible_cpus();
        if (c->n_cpus <= 0 || c->ticks_per_sec <= 0) {
                r = c->n_cpus < 0 ? c->n_cpus : -EINVAL;
                goto fail;
        }
        c->batch_keys = calloc(BATCH_ENTRIES, sizeof(uint32_t));
        c->batch_values = calloc((size_t) BATCH_ENTRIES * (size_t) c->n_cpus, sizeof(struct ts_proc));
        if (!c->batch_keys || !c->batch_values) {
                r = -ENOMEM;
                goto fail;
        }

        c->skel = trapstat_bpf__open();
        if (!c->skel) {
                r = log_error_errno(errno, "Failed to open BPF object: %m");
                goto fail;
        }
        r = bpf_map__set_max_entries(c->skel->maps.processes,
                                     config->max_processes ?: TS_DEFAULT_MAX_PROCESSES);
        if (r < 0)
                goto fail;

        progs[SOURCE_PAGE_FAULT_USER] = c->skel->progs.page_fault_user;
        progs[SOURCE_PAGE_FAULT_KERNEL] = c->skel->progs.page_fault_kernel;
        progs[SOURCE_PROCESS_EXIT] = c->skel->progs.sched_process_exit;
        progs[SOURCE_PROCESS_EXEC] = c->skel->progs.sched_process_exec;

        vmlinux = btf__load_vmlinux_btf();
        for (size_t i = 0; i < ELEMENTSOF(programs); i++)
                if (!kernel_has_tracepoint(vmlinux, programs[i].tracepoint)) {
                        bpf_program__set_autoload(progs[programs[i].source], false);
                        set_source(c, programs[i].source, programs[i].tracepoint, -ENOENT, "tracepoint not in kernel BTF");
                        progs[programs[i].source] = NULL;
                }
        btf__free(vmlinux);

        r = trapstat_bpf__load(c->skel);
        if (r < 0) {
                r = log_error_errno(r, "Failed to load BPF programs: %m");
                goto fail;
        }

        for (size_t i = 0; i < ELEMENTSOF(programs); i++) {
                int s = programs[i].source;

                if (!progs[s])
                        continue;
                c->links[s] = bpf_program__attach(progs[s]);
                if (!c->links[s]) {
                        r = -errno;
                        set_source(c, s, programs[i].tracepoint, r, "attach failed");
                        log_warning_errno(r, "Failed to attach to tracepoint %s, its counts are missing: %m",
                                          programs[i].tracepoint);
                } else
                        set_source(c, s, programs[i].tracepoint, 0, NULL);
        }
        /* /proc/PID/stat minflt/majflt is read for active processes; it is always there. */
        set_source(c, SOURCE_PROC_STAT, "proc_pid_stat", 0, NULL);

        if (!c->sources[SOURCE_PAGE_FAULT_USER].active) {
                r = log_error_errno(ENOTSUP, "No page fault source could be attached: %s",
                                    c->sources[SOURCE_PAGE_FAULT_USER].reason);
                goto fail;
        }

        c->ringbuf = ring_buffer__new(bpf_map__fd(c->skel->maps.events), handle_event, c, NULL);
        if (!c->ringbuf) {
                r = log_error_errno(errno, "Failed to set up BPF ring buffer: %m");
                goto fail;
        }

        c->attached_boottime = now_usec(CLOCK_BOOTTIME) * NSEC_PER_USEC;
        *ret = c;
        return 0;
fail:
        collector_free(c);
        return r;
}

Collector *collector_free(Collector *c) {
        if (!c)
                return NULL;
        ring_buffer__free(c->ringbuf);
        for (size_t i = 0; i < _SOURCE_MAX; i++)
                bpf_link__destroy(c->links[i]);
        trapstat_bpf__destroy(c->skel);
        tdestroy(c->procs, proc_free);
        for (size_t i = 0; i < c->n_dead; i++)
                proc_free(c->dead[i]);
        free(c->dead);
        free(c->touched);
        if (c->events)
                events_clear(c);
        free(c->events);
        free(c->samples);
        free(c->batch_keys);
        free(c->batch_values);
        free(c);
        return NULL;
}

int collector_event_fd(Collector *c) {
        return ring_buffer__epoll_fd(c->ringbuf);
}

static uint64_t start_ticks(Collector *c, uint64_t start_time_ns) {
        return start_time_ns / (NSEC_PER_SEC / (uint64_t) c->ticks_per_sec);
}

static CollectorProc *proc_find(Collector *c, uint32_t pid) {
        CollectorProc key = { .info.pid = pid };
        CollectorProc **found = tfind(&key, &c->procs, proc_compare);

        return found ? *found : NULL;
}

static void proc_forget(Collector *c, CollectorProc *p) {
        tdelete(p, &c->procs, proc_compare);
        c->n_procs--;
}

static int touch(Collector *c, CollectorProc *p) {
        if (p->touched)
                return 0;
        p->touched = true;
        return append((void **) &c->touched, &c->n_touched, &c->touched_capacity, sizeof(p), &p);
}

/* A process that ended without us seeing its exit event (or whose pid now belongs to another
 * process): report it exited with what it had. */
static int proc_retire(Collector *c, CollectorProc *p) {
        int r;

        proc_forget(c, p);
        p->info.exited = true;
        r = touch(c, p);
        if (r < 0)
                return r;
        return append((void **) &c->dead, &c->n_dead, &c->dead_capacity, sizeof(p), &p);
}

static int proc_new(Collector *c, uint32_t pid, const struct ts_proc *id, uint64_t now, CollectorProc **ret) {
        CollectorProc *p;
        ProcStat st;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->info.pid = pid;
        p->info.start_time = id->start_time;
        p->info.uid = id->uid;
        memcpy(p->info.comm, id->comm, sizeof(p->info.comm) - 1);
        p->info.first_seen_usec = now;
        (void) proc_read_cmdline(c->proc_fd, pid, CMDLINE_MAX, &p->info.cmdline);
        (void) proc_read_unit(c->proc_fd, pid, &p->info.unit);

        /* A process started after counting began has all of its min_flt/maj_flt in our window;
         * for an older one only what comes after this first look counts. */
        if (id->start_time < c->attached_boottime && proc_read_stat(c->proc_fd, pid, &st) >= 0 &&
            st.start_ticks == start_ticks(c, id->start_time)) {
                p->minflt_seen = st.minflt;
                p->majflt_seen = st.majflt;
        }

        if (!tsearch(p, &c->procs, proc_compare)) {
                proc_free(p);
                return -ENOMEM;
        }
        c->n_procs++;
        *ret = p;
        return 0;
}

static void account_minmaj(CollectorProc *p, uint64_t minflt, uint64_t majflt) {
        /* The kernel's counters only grow; guard anyway against a mismatched reading. */
        if (minflt >= p->minflt_seen) {
                p->delta.minor += minflt - p->minflt_seen;
                p->minflt_seen = minflt;
        }
        if (majflt >= p->majflt_seen) {
                p->delta.major += majflt - p->majflt_seen;
                p->majflt_seen = majflt;
        }
}

/* Sums one map entry's per-CPU copies; identity comes from a CPU that created the entry. */
static void sum_cpus(const struct ts_proc *percpu, int n_cpus, struct ts_proc *ret) {
        struct ts_proc sum = {};

        for (int i = 0; i < n_cpus; i++) {
                const struct ts_proc *v = &percpu[i];

                if (v->start_time && !sum.start_time) {
                        sum.start_time = v->start_time;
                        sum.uid = v->uid;
                        memcpy(sum.comm, v->comm, sizeof(sum.comm));
                }
                sum.user_faults += v->user_faults;
                sum.kernel_faults += v->kernel_faults;
                sum.fault_read += v->fault_read;
                sum.fault_write += v->fault_write;
                sum.fault_exec += v->fault_exec;
                sum.fault_protection += v->fault_protection;
        }
        *ret = sum;
}

static int drain_entry(Collector *c, uint32_t pid, const struct ts_proc *percpu, uint64_t now) {
        struct ts_proc sum;
        CollectorProc *p;
        int r;

        sum_cpus(percpu, c->n_cpus, &sum);
        p = proc_find(c, pid);
        if (p && p->info.start_time != sum.start_time) {
                r = proc_retire(c, p);
                if (r < 0)
                        return r;
                p = NULL;
        }
        if (!p) {
                r = proc_new(c, pid, &sum, now, &p);
                if (r < 0)
                        return r;
        }

        p->delta.user = sum.user_faults - p->drained.user_faults;
        p->delta.kernel = sum.kernel_faults - p->drained.kernel_faults;
        p->delta.read = sum.fault_read - p->drained.fault_read;
        p->delta.write = sum.fault_write - p->drained.fault_write;
        p->delta.exec = sum.fault_exec - p->drained.fault_exec;
        p->delta.protection = sum.fault_protection - p->drained.fault_protection;
        p->drained = sum;
        if (faults_is_zero(&p->delta))
                return 0;
        return touch(c, p);
}

static int drain_map(Collector *c, uint64_t now) {
        int fd = bpf_map__fd(c->skel->maps.processes);
        uint32_t in_batch = 0, out_batch = 0;
        bool first = true, done = false;
        int r;

        while (!done) {
                __u32 count = BATCH_ENTRIES;

                r = bpf_map_lookup_batch(fd, first ? NULL : &in_batch, &out_batch, c->batch_keys, c->batch_values,
                                         &count, NULL);
                if (r < 0) {
                        /* ENOENT: this was the last batch (count may still be > 0). */
                        if (errno != ENOENT)
                                return -errno;
                        done = true;
                }
                for (__u32 i = 0; i < count; i++) {
                        r = drain_entry(c, c->batch_keys[i], &c->batch_values[(size_t) i * (size_t) c->n_cpus], now);
                        if (r < 0)
                                return r;
                }
                in_batch = out_batch;
                first = false;
        }
        return 0;
}

/* Applies this tick's lifecycle events, in the order they happened. Runs after the map was
 * drained, so every process they name that faulted is known by now. */
static int handle_events(Collector *c) {
        int fd = bpf_map__fd(c->skel->maps.processes);
        int r = 0;

        for (size_t i = 0; i < c->n_events && r >= 0; i++) {
                LifecycleEvent *e = &c->events[i];
                CollectorProc *p = proc_find(c, e->tgid);

                if (!p || p->info.start_time != e->start_time)
                        continue;

                if (e->type == TS_EVENT_EXEC) {
                        char *cmdline = NULL;

                        /* Counting goes on under the new name. /proc has the whole command
                         * line while the process lives; the event's copy is cut at
                         * TS_ARGS_LEN but survives a process that is already gone. */
                        memcpy(p->info.comm, e->comm, sizeof(p->info.comm));
                        if (proc_read_cmdline(c->proc_fd, p->info.pid, CMDLINE_MAX, &cmdline) < 0) {
                                cmdline = e->cmdline;
                                e->cmdline = NULL;
                        }
                        free(p->info.cmdline);
                        p->info.cmdline = cmdline;
                        r = touch(c, p);
                        continue;
                }

                /* Exit. The map was drained after this event was read, and a dead process
                 * faults no more: its counts are complete. Remove the entry so the map stays
                 * bounded. */
                account_minmaj(p, e->min_flt, e->maj_flt);
                (void) bpf_map_delete_elem(fd, &e->tgid);
                r = proc_retire(c, p);
        }
        events_clear(c);
        return r;
}

int collector_drain(Collector *c, uint64_t now_usec, const ProcessSample **ret_samples, size_t *ret_n) {
        size_t n = 0;
        int r;

        for (size_t i = 0; i < c->n_dead; i++)
                proc_free(c->dead[i]);
        c->n_dead = 0;
        c->n_touched = 0;

        /* Lifecycle events first, then the map: every count of a process whose exit we saw is
         * in the map by the time we read it. */
        r = ring_buffer__consume(c->ringbuf);
        if (r < 0)
                return r;
        r = drain_map(c, now_usec);
        if (r < 0)
                return r;

        /* Minor/major faults of the processes still running, from the kernel's accounting. */
        for (size_t i = 0; i < c->n_touched; i++) {
                CollectorProc *p = c->touched[i];
                ProcStat st;

                if (!p->info.exited && proc_read_stat(c->proc_fd, p->info.pid, &st) >= 0 &&
                    st.start_ticks == start_ticks(c, p->info.start_time))
                        account_minmaj(p, st.minflt, st.majflt);
        }
        r = handle_events(c);
        if (r < 0)
                return r;

        if (c->n_touched > c->samples_capacity) {
                ProcessSample *s = reallocarray(c->samples, c->n_touched, sizeof(*s));
                if (!s)
                        return -ENOMEM;
                c->samples = s;
                c->samples_capacity = c->n_touched;
        }
        for (size_t i = 0; i < c->n_touched; i++) {
                CollectorProc *p = c->touched[i];

                p->info.last_seen_usec = now_usec;
                c->samples[n++] = (ProcessSample) { .process = &p->info, .delta = p->delta };
                p->delta = (Faults) {};
                p->touched = false;
        }
        *ret_samples = c->samples;
        *ret_n = n;
        return 0;
}

const CollectorSource *collector_sources(Collector *c, size_t *ret_n) {
        *ret_n = _SOURCE_MAX;
        return c->sources;
}

size_t collector_n_tracked(Collector *c) {
        return c->n_procs;
}

uint64_t collector_drops(Collector *c) {
        int fd = bpf_map__fd(c->skel->maps.drops);
        uint64_t total = 0;

        for (uint32_t k = 0; k < TS_DROP_MAX; k++) {
                uint64_t values[c->n_cpus];

                if (bpf_map_lookup_elem(fd, &k, values) < 0)
                        continue;
                for (int i = 0; i < c->n_cpus; i++)
                        total += values[i];
        }
        return total;
}
