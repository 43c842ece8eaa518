/* SPDX-License-Identifier: MIT */
#include "collector.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <search.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "proc-util.h"
#include "time-util.h"
#include "trapstat.h"
#include "trapstat.skel.h"
#include "traps.h"

/* Longest command line kept per process. */
#define CMDLINE_MAX 4096
/* Hash entries read per bpf_map_lookup_batch() call. */
#define BATCH_ENTRIES 256
/* How often processes that stopped being counted are checked against /proc. */
#define GC_INTERVAL_USEC (30 * USEC_PER_SEC)
/* Slot counters read per bpf_map_lookup_batch() call; chunks without an owner are skipped. */
#define SLOT_CHUNK 256U
/* uid of a process whose user cannot be known: (uid_t) -1, which no client has. */
#define UID_UNKNOWN UINT32_MAX
#define ALIGN8(x) (((x) + 7) & ~(size_t) 7)

_Static_assert(TS_N_SIGNALS == FAULT_SIGNALS && TS_N_SI_CODES == SI_CODE_SLOTS && TS_N_VECTORS == TRAP_VECTORS,
               "bpf/trapstat.h and common/traps.h agree on the trap layout");

/* What user space knows about one tracked process incarnation. */
typedef struct CollectorProc {
        ProcessInfo info;
        int slot;                      /* the slot it counts in, or -1 */
        struct ts_counters slot_seen;  /* slot counters already turned into deltas */
        struct ts_counters hash_seen;  /* the same for its fallback hash entry */
        Traps *traps_seen;             /* the same for its trap hash entry; NULL until it trapped */
        uint64_t minflt_seen;          /* the kernel's min_flt/maj_flt already reported */
        uint64_t majflt_seen;
        bool minmaj_baseline;          /* started before counting did: its first reading is the baseline */
        uint64_t last_counted_usec;    /* for the garbage collection of vanished processes */
        int stat_fd;                   /* its /proc/PID/stat, kept open when that is the min/maj source */
        Faults delta;                  /* this tick's */
        Traps traps_delta;
        bool has_traps_delta;
        bool touched;                  /* goes into this tick's samples */
} CollectorProc;

/* A lifecycle event from the ring buffer, kept until the maps have been drained. */
typedef struct LifecycleEvent {
        uint32_t type; /* enum ts_event_type */
        uint32_t tgid;
        uint64_t start_time;
        uint64_t min_flt, maj_flt; /* exit: the final figures */
        uint32_t uid;              /* the real uid after the exec, at the exit */
        char comm[COMM_MAX];       /* the new name, the final name */
        char *cmdline;             /* exec: from the event's argument bytes, NULL when none */
} LifecycleEvent;

enum {
        SOURCE_PAGE_FAULT_USER,
        SOURCE_PAGE_FAULT_KERNEL,
        SOURCE_PERF_USER,   /* fallbacks for the two above */
        SOURCE_PERF_KERNEL,
        SOURCE_SIGNAL_GENERATE,
        SOURCE_PROCESS_EXIT,
        SOURCE_PROCESS_EXEC,
        SOURCE_TASK_ITERATOR, /* minor/major faults, name and user of tracked processes */
        SOURCE_PROC_STAT,     /* its fallback */
        _SOURCE_MAX
};

static const char *const source_names[_SOURCE_MAX] = {
        [SOURCE_PAGE_FAULT_USER] = "page_fault_user",
        [SOURCE_PAGE_FAULT_KERNEL] = "page_fault_kernel",
        [SOURCE_PERF_USER] = "perf_page_faults_user",
        [SOURCE_PERF_KERNEL] = "perf_page_faults_kernel",
        [SOURCE_SIGNAL_GENERATE] = "signal_generate",
        [SOURCE_PROCESS_EXIT] = "sched_process_exit",
        [SOURCE_PROCESS_EXEC] = "sched_process_exec",
        [SOURCE_TASK_ITERATOR] = "task_iterator",
        [SOURCE_PROC_STAT] = "proc_pid_stat",
};

/* Every kind of loss BPF counts (enum ts_drop), named and explained for GetStatus. */
static const CollectorDropKind drop_kinds[TS_DROP_MAX] = {
        [TS_DROP_MAP_FULL] = { "fault_map_full",
                               "one page fault not counted: its process found no free counting slot and the fallback "
                               "map was full (--slots, --max-processes)" },
        [TS_DROP_TRAPS_FULL] = { "trap_map_full",
                                 "one trap not counted: the map of trapping processes was full (--max-processes)" },
        [TS_DROP_EXIT_EVENT] = { "exit_event_lost",
                                 "one process exit: the event buffer was full (--event-buffer); the process is marked "
                                 "exited up to 30 s late, its last minor/major faults and a rename since its last tick "
                                 "are missing" },
        [TS_DROP_EXEC_EVENT] = { "exec_event_lost",
                                 "one exec: the event buffer was full (--event-buffer); the new name and command line "
                                 "are read from /proc, and are missing if the process is already gone" },
};

struct Collector {
        struct trapstat_bpf *skel;
        struct bpf_link *links[_SOURCE_MAX]; /* attached programs; detached when destroyed */
        struct bpf_link **perf_links;        /* SOURCE_PERF_*: 2 * n_cpus, one per CPU each */
        struct ring_buffer *ringbuf;
        struct bpf_link *iter_link;          /* SOURCE_TASK_ITERATOR */
        struct ts_task_record *records;      /* read from it every tick */
        size_t records_capacity;
        int proc_fd;
        int n_cpus;
        long ticks_per_sec;          /* USER_HZ, the unit of /proc/PID/stat start time */
        uint64_t attached_boottime;  /* ns since boot when counting started */
        uint64_t last_gc_usec;
        size_t n_stat_fds, max_stat_fds; /* /proc/PID/stat fds kept open, and how many may be */

        uint32_t n_slots;
        struct ts_owner *owner_map;  /* slot_owner and slot_ident, mmap'd */
        struct ts_ident *ident_map;
        size_t owner_map_size, ident_map_size;
        uint32_t *owners;            /* this tick's copy of the owners */
        CollectorProc **slot_procs;  /* who user space believes owns each slot */
        uint32_t *chunk_keys;        /* SLOT_CHUNK: slot counters are read a chunk of slots at a time */
        struct ts_counters *percpu;  /* SLOT_CHUNK * n_cpus values */
        struct ts_counters *zero_percpu; /* n_cpus zeroed values */

        void *procs;                 /* tsearch() tree of CollectorProc by (pid, start_time) */
        size_t n_procs;

        CollectorProc **touched;     /* this tick's */
        size_t n_touched, touched_capacity;
        CollectorProc **dead;        /* exited last tick: freed at the start of the next drain */
        size_t n_dead, dead_capacity;
        LifecycleEvent *events;      /* read from the ring buffer this tick */
        size_t n_events, events_capacity;
        ProcessSample *samples;
        size_t samples_capacity;

        struct ts_proc_key *batch_keys;
        void *batch_values;          /* BATCH_ENTRIES values of the largest map value */

        CollectorSource sources[_SOURCE_MAX];
        char reasons[_SOURCE_MAX][128];
};

static int proc_compare(const void *a, const void *b) {
        const ProcessInfo *x = &((const CollectorProc *) a)->info, *y = &((const CollectorProc *) b)->info;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

static void proc_free(void *p) {
        CollectorProc *proc = p;

        if (!proc)
                return;
        process_info_done(&proc->info);
        free(proc->traps_seen);
        if (proc->stat_fd >= 0)
                close(proc->stat_fd);
        free(proc);
}

/* Appends to a growing array of elem-sized values, doubling its capacity. */
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
        const struct ts_event_header *h = data;
        LifecycleEvent x;
        int r;

        if (size < sizeof(*h))
                return 0;
        x = (LifecycleEvent) { .type = h->type, .tgid = h->tgid, .start_time = h->start_time };
        if (h->type == TS_EVENT_EXIT && size >= sizeof(struct ts_exit_event)) {
                const struct ts_exit_event *e = data;

                x.min_flt = e->min_flt;
                x.maj_flt = e->maj_flt;
                x.uid = e->uid;
                memcpy(x.comm, e->comm, sizeof(x.comm) - 1);
        } else if (h->type == TS_EVENT_EXEC && size >= sizeof(struct ts_exec_event)) {
                const struct ts_exec_event *e = data;

                x.uid = e->uid;
                memcpy(x.comm, e->comm, sizeof(x.comm) - 1);
                (void) proc_cmdline_format(e->args, e->args_len > TS_ARGS_LEN ? TS_ARGS_LEN : e->args_len,
                                           e->args_len >= TS_ARGS_LEN, &x.cmdline);
        } else
                return 0;
        r = append((void **) &c->events, &c->n_events, &c->events_capacity, sizeof(x), &x);
        if (r < 0)
                free(x.cmdline);
        return r;
}

/* error 0: active; otherwise inactive because of why, followed by strerror(error) unless
 * error is -ECANCELED (a choice, not a failure). */
static void set_source(Collector *c, int i, int error, const char *why) {
        c->sources[i].name = source_names[i];
        c->sources[i].active = error == 0;
        c->sources[i].reason = NULL;
        if (error != 0) {
                if (error == -ECANCELED)
                        snprintf(c->reasons[i], sizeof(c->reasons[i]), "%s", why);
                else
                        snprintf(c->reasons[i], sizeof(c->reasons[i]), "%s: %s", why, strerror(abs(error)));
                c->sources[i].reason = c->reasons[i];
        }
}

/* Parses the comma-separated list of sources not to use into disabled[]. */
static int parse_disabled(const char *list, bool disabled[_SOURCE_MAX]) {
        for (const char *p = list; p && *p;) {
                size_t len = strcspn(p, ",");
                bool found = false;

                for (int i = 0; i < _SOURCE_MAX; i++)
                        if (strlen(source_names[i]) == len && strncmp(source_names[i], p, len) == 0) {
                                disabled[i] = found = true;
                                break;
                        }
                if (!found && len > 0)
                        return log_error_errno(EINVAL, "Unknown source '%.*s' in --disable-source", (int) len, p);
                p += len + (p[len] == ',');
        }
        return 0;
}

int collector_check_sources(const char *list) {
        bool disabled[_SOURCE_MAX] = {};
        return parse_disabled(list, disabled);
}

/* Opens the PAGE_FAULTS software event on every CPU, for user or kernel mode only, and
 * attaches prog to each. CPUs that are offline are skipped. */
static int attach_perf(Collector *c, struct bpf_program *prog, bool user_mode, struct bpf_link **links) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(attr),
                .config = PERF_COUNT_SW_PAGE_FAULTS,
                .sample_period = 1,
                .exclude_kernel = user_mode,
                .exclude_user = !user_mode,
        };
        int attached = 0;

        for (int cpu = 0; cpu < c->n_cpus; cpu++) {
                int fd = (int) syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

                if (fd < 0) {
                        if (errno == ENODEV)
                                continue;
                        return -errno;
                }
                links[cpu] = bpf_program__attach_perf_event(prog, fd);
                if (!links[cpu]) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
                attached++;
        }
        return attached > 0 ? 0 : -ENODEV;
}

/* Each tracepoint is checked in the kernel's BTF before loading, so one the kernel lacks
 * (e.g. the x86 exception events elsewhere) turns into an inactive source, not a load failure. */
static bool kernel_has_tracepoint(const struct btf *vmlinux, const char *tp) {
        char name[128];

        snprintf(name, sizeof(name), "btf_trace_%s", tp);
        return vmlinux && btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) >= 0;
}

/* An mmap'able BPF array of n elements of size bytes (arrays round elements up to 8 bytes). */
static void *map_array(struct bpf_map *map, uint32_t n, size_t size, size_t *ret_size) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), bytes = ((size_t) n * ALIGN8(size) + page - 1) / page * page;
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);

        if (p == MAP_FAILED)
                return NULL;
        *ret_size = bytes;
        return p;
}

/* Owners and identities of the slots are read in place every tick, without a system call. */
static int map_slots(Collector *c) {
        c->owner_map = map_array(c->skel->maps.slot_owner, c->n_slots, sizeof(struct ts_owner), &c->owner_map_size);
        if (!c->owner_map)
                return -errno;
        c->ident_map = map_array(c->skel->maps.slot_ident, c->n_slots, sizeof(struct ts_ident), &c->ident_map_size);
        if (!c->ident_map)
                return -errno;
        return 0;
}

static bool is_power_of_two(uint32_t x) {
        return x && !(x & (x - 1));
}

int collector_new(const CollectorConfig *config, Collector **ret) {
        static const int tracepoints[] = {
                SOURCE_PAGE_FAULT_USER, SOURCE_PAGE_FAULT_KERNEL, SOURCE_SIGNAL_GENERATE,
                SOURCE_PROCESS_EXIT,    SOURCE_PROCESS_EXEC,
        };
        uint32_t max_processes = config->max_processes ?: TS_DEFAULT_MAX_PROCESSES;
        uint32_t event_buffer = config->event_buffer ?: TS_DEFAULT_EVENT_BUFFER;
        struct bpf_program *progs[_SOURCE_MAX] = {};
        bool disabled[_SOURCE_MAX] = {};
        struct btf *vmlinux = NULL;
        struct rlimit nofile;
        Collector *c;
        int r;

        libbpf_set_print(libbpf_print);

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->proc_fd = config->proc_fd;
        c->n_slots = config->slots ?: TS_DEFAULT_SLOTS;
        c->ticks_per_sec = sysconf(_SC_CLK_TCK);
        c->n_cpus = libbpf_num_possible_cpus();
        if (c->n_cpus <= 0 || c->ticks_per_sec <= 0 || !is_power_of_two(c->n_slots) ||
            !collector_event_buffer_valid(event_buffer)) {
                r = c->n_cpus < 0 ? c->n_cpus : -EINVAL;
                goto fail;
        }
        r = parse_disabled(config->disable, disabled);
        if (r < 0)
                goto fail;
        c->owners = calloc(c->n_slots, sizeof(uint32_t));
        c->slot_procs = calloc(c->n_slots, sizeof(CollectorProc *));
        c->chunk_keys = calloc(SLOT_CHUNK, sizeof(uint32_t));
        c->percpu = calloc((size_t) SLOT_CHUNK * (size_t) c->n_cpus, sizeof(struct ts_counters));
        c->zero_percpu = calloc((size_t) c->n_cpus, sizeof(struct ts_counters));
        c->perf_links = calloc(2 * (size_t) c->n_cpus, sizeof(struct bpf_link *));
        c->batch_keys = calloc(BATCH_ENTRIES, sizeof(struct ts_proc_key));
        /* Per-CPU hash values come n_cpus at a time; trap values one at a time. */
        c->batch_values = calloc(BATCH_ENTRIES, MAX(sizeof(struct ts_proc) * (size_t) c->n_cpus, sizeof(struct ts_traps)));
        if (!c->owners || !c->slot_procs || !c->chunk_keys || !c->percpu || !c->zero_percpu || !c->perf_links ||
            !c->batch_keys || !c->batch_values) {
                r = -ENOMEM;
                goto fail;
        }

        c->skel = trapstat_bpf__open();
        if (!c->skel) {
                r = log_error_errno(errno, "Failed to open BPF object: %m");
                goto fail;
        }
        c->skel->rodata->slot_mask = c->n_slots - 1;
        c->skel->rodata->wakeup_bytes = event_buffer / 16;
        if ((r = bpf_map__set_max_entries(c->skel->maps.events, event_buffer)) < 0 ||
            (r = bpf_map__set_max_entries(c->skel->maps.slot_owner, c->n_slots)) < 0 ||
            (r = bpf_map__set_max_entries(c->skel->maps.slot_ident, c->n_slots)) < 0 ||
            (r = bpf_map__set_max_entries(c->skel->maps.slot_counters, c->n_slots)) < 0 ||
            (r = bpf_map__set_max_entries(c->skel->maps.processes, max_processes)) < 0 ||
            (r = bpf_map__set_max_entries(c->skel->maps.traps, max_processes)) < 0)
                goto fail;

        progs[SOURCE_PAGE_FAULT_USER] = c->skel->progs.page_fault_user;
        progs[SOURCE_PAGE_FAULT_KERNEL] = c->skel->progs.page_fault_kernel;
        progs[SOURCE_PERF_USER] = c->skel->progs.perf_page_fault_user;
        progs[SOURCE_PERF_KERNEL] = c->skel->progs.perf_page_fault_kernel;
        progs[SOURCE_SIGNAL_GENERATE] = c->skel->progs.signal_generate;
        progs[SOURCE_PROCESS_EXIT] = c->skel->progs.sched_process_exit;
        progs[SOURCE_PROCESS_EXEC] = c->skel->progs.sched_process_exec;
        progs[SOURCE_TASK_ITERATOR] = c->skel->progs.tracked_tasks;

        /* Decide before loading what is loaded: a tracepoint the kernel lacks or that is
         * disabled is not; the perf fallback only where its tracepoint is not used. */
        vmlinux = btf__load_vmlinux_btf();
        for (size_t i = 0; i < ELEMENTSOF(tracepoints); i++) {
                int s = tracepoints[i];

                if (disabled[s])
                        set_source(c, s, -ECANCELED, "disabled by --disable-source");
                else if (!kernel_has_tracepoint(vmlinux, source_names[s]))
                        set_source(c, s, -ENOENT, "tracepoint not in kernel BTF");
                else
                        continue;
                bpf_program__set_autoload(progs[s], false);
                progs[s] = NULL;
        }
        btf__free(vmlinux);
        if (disabled[SOURCE_TASK_ITERATOR]) {
                set_source(c, SOURCE_TASK_ITERATOR, -ECANCELED, "disabled by --disable-source");
                bpf_program__set_autoload(progs[SOURCE_TASK_ITERATOR], false);
                progs[SOURCE_TASK_ITERATOR] = NULL;
        }
        for (int s = SOURCE_PERF_USER; s <= SOURCE_PERF_KERNEL; s++) {
                int tracepoint = s == SOURCE_PERF_USER ? SOURCE_PAGE_FAULT_USER : SOURCE_PAGE_FAULT_KERNEL;

                if (progs[tracepoint] || disabled[s]) {
                        set_source(c, s, -ECANCELED,
                                   disabled[s] ? "disabled by --disable-source" : "not needed: the tracepoint is used");
                        bpf_program__set_autoload(progs[s], false);
                        progs[s] = NULL;
                }
        }

        r = trapstat_bpf__load(c->skel);
        if (r < 0) {
                r = log_error_errno(r, "Failed to load BPF programs: %m");
                goto fail;
        }
        r = map_slots(c);
        if (r < 0) {
                log_error_errno(r, "Failed to map the counting slots: %m");
                goto fail;
        }

        for (size_t i = 0; i < ELEMENTSOF(tracepoints); i++) {
                int s = tracepoints[i];

                if (!progs[s])
                        continue;
                c->links[s] = bpf_program__attach(progs[s]);
                r = c->links[s] ? 0 : -errno;
                set_source(c, s, r, "attach failed");
                if (r < 0)
                        log_warning_errno(r, "Failed to attach to tracepoint %s, its counts are missing: %m",
                                          source_names[s]);
        }
        for (int s = SOURCE_PERF_USER; s <= SOURCE_PERF_KERNEL; s++) {
                if (!progs[s])
                        continue;
                r = attach_perf(c, progs[s], s == SOURCE_PERF_USER,
                                c->perf_links + (s == SOURCE_PERF_USER ? 0 : (size_t) c->n_cpus));
                set_source(c, s, r, "perf_event_open failed");
                if (r < 0)
                        log_warning_errno(r, "Failed to attach to the PAGE_FAULTS software event: %m");
                else
                        log_info("Counting page faults with the perf software event instead of %s",
                                 source_names[s == SOURCE_PERF_USER ? SOURCE_PAGE_FAULT_USER : SOURCE_PAGE_FAULT_KERNEL]);
        }
        /* Minor/major faults: the task iterator, else /proc/PID/stat of the active processes. */
        if (progs[SOURCE_TASK_ITERATOR]) {
                c->iter_link = bpf_program__attach_iter(progs[SOURCE_TASK_ITERATOR], NULL);
                r = c->iter_link ? 0 : -errno;
                set_source(c, SOURCE_TASK_ITERATOR, r, "attach failed");
                if (r < 0)
                        log_warning_errno(r, "Failed to attach the task iterator, reading /proc/PID/stat instead: %m");
        }
        if (c->iter_link)
                set_source(c, SOURCE_PROC_STAT, -ECANCELED, "not needed: the task iterator is used");
        else {
                set_source(c, SOURCE_PROC_STAT, 0, NULL);
                /* Half of the fd limit for the stat fds of tracked processes, the rest for
                 * clients, the database and BPF; below 2048 fds, none (read by path). */
                if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
                    nofile.rlim_cur >= 2048)
                        c->max_stat_fds = (size_t) nofile.rlim_cur / 2;
        }

        if (!c->sources[SOURCE_PAGE_FAULT_USER].active && !c->sources[SOURCE_PERF_USER].active) {
                r = log_error_errno(ENOTSUP, "No page fault source could be attached: %s; %s",
                                    c->sources[SOURCE_PAGE_FAULT_USER].reason, c->sources[SOURCE_PERF_USER].reason);
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
        bpf_link__destroy(c->iter_link);
        free(c->records);
        for (size_t i = 0; i < _SOURCE_MAX; i++)
                bpf_link__destroy(c->links[i]);
        for (size_t i = 0; c->perf_links && i < 2 * (size_t) c->n_cpus; i++)
                bpf_link__destroy(c->perf_links[i]);
        free(c->perf_links);
        trapstat_bpf__destroy(c->skel);
        tdestroy(c->procs, proc_free);
        for (size_t i = 0; i < c->n_dead; i++)
                proc_free(c->dead[i]);
        if (c->events)
                events_clear(c);
        free(c->events);
        free(c->dead);
        free(c->touched);
        free(c->samples);
        if (c->owner_map)
                (void) munmap(c->owner_map, c->owner_map_size);
        if (c->ident_map)
                (void) munmap(c->ident_map, c->ident_map_size);
        free(c->owners);
        free(c->slot_procs);
        free(c->chunk_keys);
        free(c->percpu);
        free(c->zero_percpu);
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

/* The kernel's view of a tracked process, if it still is the process we track. Reading an fd
 * kept open costs a third of open, read, close by path (bench/daemon-cost.py); fds are kept
 * while the limit leaves room for clients, else read by path. */
static int proc_stat(Collector *c, CollectorProc *p, ProcStat *ret) {
        ProcStat st;
        int r;

        if (p->stat_fd < 0 && c->n_stat_fds < c->max_stat_fds) {
                p->stat_fd = proc_open_stat(c->proc_fd, p->info.pid);
                if (p->stat_fd >= 0)
                        c->n_stat_fds++;
        }
        r = p->stat_fd >= 0 ? proc_pread_stat(p->stat_fd, &st) : proc_read_stat(c->proc_fd, p->info.pid, &st);
        if (r < 0)
                return r;
        if (st.start_ticks != start_ticks(c, p->info.start_time))
                return -ESRCH; /* the pid is someone else's now */
        *ret = st;
        return 0;
}

static void proc_close_stat(Collector *c, CollectorProc *p) {
        if (p->stat_fd < 0)
                return;
        close(p->stat_fd);
        p->stat_fd = -1;
        c->n_stat_fds--;
}

static CollectorProc *proc_find(Collector *c, uint32_t pid, uint64_t start_time) {
        CollectorProc key = { .info.pid = pid, .info.start_time = start_time };
        CollectorProc **found = tfind(&key, &c->procs, proc_compare);

        return found ? *found : NULL;
}

static int touch(Collector *c, CollectorProc *p) {
        if (p->touched)
                return 0;
        p->touched = true;
        return append((void **) &c->touched, &c->n_touched, &c->touched_capacity, sizeof(p), &p);
}

/* The process is gone: report it exited with what it had, free it after this tick. */
static int proc_retire(Collector *c, CollectorProc *p) {
        int r;

        tdelete(p, &c->procs, proc_compare);
        c->n_procs--;
        proc_close_stat(c, p);
        if (p->slot >= 0 && c->slot_procs[p->slot] == p)
                c->slot_procs[p->slot] = NULL;
        p->info.exited = true;
        r = touch(c, p);
        if (r < 0)
                return r;
        return append((void **) &c->dead, &c->n_dead, &c->dead_capacity, sizeof(p), &p);
}

/* A child that never exec'd runs its parent's program: while it lives /proc says so, once it is
 * gone its parent is the one to ask (as ps shows a forked child with its parent's command line),
 * and it starts in its parent's unit. */
static void proc_inherit(Collector *c, CollectorProc *p, uint32_t ppid, uint64_t parent_start_time) {
        CollectorProc *parent = proc_find(c, ppid, parent_start_time);

        if (parent) {
                if (!p->info.cmdline && parent->info.cmdline)
                        p->info.cmdline = strdup(parent->info.cmdline);
                if (!p->info.unit && parent->info.unit)
                        p->info.unit = strdup(parent->info.unit);
                return;
        }
        if (ppid == 0 || !proc_is_alive(c->proc_fd, ppid, parent_start_time))
                return;
        if (!p->info.cmdline)
                (void) proc_read_cmdline(c->proc_fd, ppid, CMDLINE_MAX, &p->info.cmdline);
        if (!p->info.unit)
                (void) proc_read_unit(c->proc_fd, ppid, &p->info.unit);
}

/* A process seen for the first time. id is what BPF recorded when the process was first counted,
 * so uid and comm are known however short its life; it is NULL only for an entry that carries
 * none (a per-CPU hash entry read while being created): then /proc tells, and a process already
 * gone is stored with an unknown user, never as root. */
static int proc_new(Collector *c, uint32_t pid, uint64_t start_time, const struct ts_ident *id, uint64_t now,
                    CollectorProc **ret) {
        CollectorProc *p;
        ProcStat st;
        bool alive;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->slot = -1;
        p->stat_fd = -1;
        p->info.pid = pid;
        p->info.start_time = start_time;
        p->info.uid = UID_UNKNOWN;
        p->info.first_seen_usec = now;
        p->last_counted_usec = now;
        alive = proc_stat(c, p, &st) >= 0;
        if (id && id->start_time == start_time) {
                p->info.uid = id->uid;
                memcpy(p->info.comm, id->comm, sizeof(p->info.comm) - 1);
        } else if (alive) {
                char path[32];
                struct stat sb;

                memcpy(p->info.comm, st.comm, sizeof(p->info.comm));
                snprintf(path, sizeof(path), "%u", pid);
                if (fstatat(c->proc_fd, path, &sb, 0) == 0)
                        p->info.uid = sb.st_uid;
        }
        /* /proc/PID/ is read only while it is this process, not one that got its pid since. */
        if (alive) {
                (void) proc_read_cmdline(c->proc_fd, pid, CMDLINE_MAX, &p->info.cmdline);
                (void) proc_read_unit(c->proc_fd, pid, &p->info.unit);
        }
        if (id && id->start_time == start_time && (!p->info.cmdline || !p->info.unit))
                proc_inherit(c, p, id->ppid, id->parent_start_time);

        /* A process started after counting began has all of its min_flt/maj_flt in our window;
         * for an older one only what comes after the first reading counts. */
        if (start_time < c->attached_boottime) {
                if (c->iter_link)
                        p->minmaj_baseline = true;
                else if (alive) {
                        p->minflt_seen = st.minflt;
                        p->majflt_seen = st.majflt;
                }
        }

        if (!tsearch(p, &c->procs, proc_compare)) {
                proc_close_stat(c, p);
                proc_free(p);
                return -ENOMEM;
        }
        c->n_procs++;
        *ret = p;
        return 0;
}

static int proc_get(Collector *c, uint32_t pid, uint64_t start_time, const struct ts_ident *id, uint64_t now,
                    CollectorProc **ret) {
        CollectorProc *p = proc_find(c, pid, start_time);

        if (p) {
                *ret = p;
                return 0;
        }
        return proc_new(c, pid, start_time, id, now, ret);
}

/* Adds what the kernel's min_flt/maj_flt grew by to the tick's delta. Returns whether they did. */
static bool account_minmaj(CollectorProc *p, uint64_t minflt, uint64_t majflt) {
        bool grew = false;

        if (p->minmaj_baseline) {
                p->minmaj_baseline = false;
                p->minflt_seen = minflt;
                p->majflt_seen = majflt;
                return false;
        }
        /* The kernel's counters only grow; guard anyway against a mismatched reading. */
        if (minflt > p->minflt_seen) {
                p->delta.minor += minflt - p->minflt_seen;
                p->minflt_seen = minflt;
                grew = true;
        }
        if (majflt > p->majflt_seen) {
                p->delta.major += majflt - p->majflt_seen;
                p->majflt_seen = majflt;
                grew = true;
        }
        return grew;
}

/* The process's latest name and user, as the kernel has them now (a rename after fork, a
 * setuid). Returns whether they changed. */
static bool proc_set_ident(CollectorProc *p, uint32_t uid, const char *comm) {
        char name[COMM_MAX] = {};
        bool changed;

        memcpy(name, comm, COMM_MAX - 1);
        changed = p->info.uid != uid || strcmp(p->info.comm, name) != 0;
        p->info.uid = uid;
        memcpy(p->info.comm, name, COMM_MAX);
        return changed;
}

static void counters_sum(const struct ts_counters *v, struct ts_counters *sum) {
        sum->user_faults += v->user_faults;
        sum->kernel_faults += v->kernel_faults;
        sum->fault_read += v->fault_read;
        sum->fault_write += v->fault_write;
        sum->fault_exec += v->fault_exec;
        sum->fault_protection += v->fault_protection;
}

/* Adds now - seen to the process's delta and remembers now as seen. */
static int account_counters(Collector *c, CollectorProc *p, const struct ts_counters *now_, struct ts_counters *seen,
                            uint64_t now) {
        Faults d = {
                .user = now_->user_faults - seen->user_faults,
                .kernel = now_->kernel_faults - seen->kernel_faults,
                .read = now_->fault_read - seen->fault_read,
                .write = now_->fault_write - seen->fault_write,
                .exec = now_->fault_exec - seen->fault_exec,
                .protection = now_->fault_protection - seen->fault_protection,
        };

        *seen = *now_;
        if (faults_is_zero(&d))
                return 0;
        faults_add(&p->delta, &d);
        p->last_counted_usec = now;
        return touch(c, p);
}

/* Frees a slot whose process exited: its counters are drained. Counters and identity are zeroed
 * before the owner is released, so the next owner starts from zero. No BPF program writes the
 * slot meanwhile: its owner is marked exited, which matches no tgid. */
static void slot_free(Collector *c, uint32_t slot) {
        (void) bpf_map_update_elem(bpf_map__fd(c->skel->maps.slot_counters), &slot, c->zero_percpu, BPF_ANY);
        memset(&c->ident_map[slot], 0, sizeof(c->ident_map[slot]));
        /* Release: the zeroed counters and identity are visible before the slot is free. */
        __atomic_store_n(&c->owner_map[slot].tgid, TS_OWNER_FREE, __ATOMIC_RELEASE);
        if (c->slot_procs[slot])
                c->slot_procs[slot]->slot = -1;
        c->slot_procs[slot] = NULL;
}

static bool owner_is_process(uint32_t owner) {
        return owner != TS_OWNER_FREE && owner != TS_OWNER_CLAIMING;
}

/* One owned slot, its counters summed over the CPUs in sum. */
static int drain_slot(Collector *c, uint32_t slot, uint32_t owner, const struct ts_counters *sum, uint64_t now) {
        CollectorProc *p = c->slot_procs[slot];
        uint32_t tgid = owner & ~TS_OWNER_EXITED;
        int r;

        if (!p || p->info.pid != tgid) {
                /* Claimed since the last tick: the identity was written before the owner, which
                 * was read with acquire semantics. */
                struct ts_ident id = c->ident_map[slot];

                if (p)
                        p->slot = -1;
                r = proc_get(c, tgid, id.start_time, &id, now, &p);
                if (r < 0)
                        return r;
                c->slot_procs[slot] = p;
                p->slot = (int) slot;
                p->slot_seen = (struct ts_counters) {};
        }
        r = account_counters(c, p, sum, &p->slot_seen, now);
        if (r < 0)
                return r;
        if (owner & TS_OWNER_EXITED)
                slot_free(c, slot);
        return 0;
}

/* One slot's per-CPU counters (n_cpus values from values), summed. */
static struct ts_counters slot_sum(Collector *c, const struct ts_counters *values) {
        struct ts_counters sum = {};

        for (int cpu = 0; cpu < c->n_cpus; cpu++)
                counters_sum(&values[cpu], &sum);
        return sum;
}

/* The counters of one slot, summed over the CPUs. */
static int slot_read(Collector *c, uint32_t slot, struct ts_counters *ret) {
        if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.slot_counters), &slot, c->percpu) < 0)
                return -errno;
        *ret = slot_sum(c, c->percpu);
        return 0;
}

/* The owners are read in place; the counters of a chunk of SLOT_CHUNK slots take one system call
 * for the chunk where it is densely owned, one per owned slot where it is sparse (a batch costs
 * per slot read, owned or not: about a third of a single lookup). */
static int drain_slots(Collector *c, uint64_t now) {
        int counters_fd = bpf_map__fd(c->skel->maps.slot_counters);
        int r;

        for (uint32_t slot = 0; slot < c->n_slots; slot++)
                c->owners[slot] = __atomic_load_n(&c->owner_map[slot].tgid, __ATOMIC_ACQUIRE);

        for (uint32_t start = 0; start < c->n_slots; start += SLOT_CHUNK) {
                uint32_t n = MIN(SLOT_CHUNK, c->n_slots - start), owned = 0, in_batch, out_batch, got;

                for (uint32_t slot = start; slot < start + n; slot++)
                        owned += owner_is_process(c->owners[slot]);
                if (owned == 0)
                        continue;

                if (owned * 3 < n) {
                        for (uint32_t slot = start; slot < start + n; slot++) {
                                struct ts_counters sum;

                                if (!owner_is_process(c->owners[slot]))
                                        continue;
                                r = slot_read(c, slot, &sum);
                                if (r < 0)
                                        return r;
                                r = drain_slot(c, slot, c->owners[slot], &sum, now);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }

                /* A batch continues after in_batch: the chunk starts after its previous slot. */
                in_batch = start - 1;
                got = n;
                r = bpf_map_lookup_batch(counters_fd, start == 0 ? NULL : &in_batch, &out_batch, c->chunk_keys,
                                         c->percpu, &got, NULL);
                if (r < 0 && errno != ENOENT)
                        return -errno;
                for (uint32_t i = 0; i < got; i++) {
                        uint32_t slot = c->chunk_keys[i];
                        struct ts_counters sum;

                        if (slot >= c->n_slots || !owner_is_process(c->owners[slot]))
                                continue;
                        sum = slot_sum(c, &c->percpu[(size_t) i * (size_t) c->n_cpus]);
                        r = drain_slot(c, slot, c->owners[slot], &sum, now);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* The task iterator: the kernel's minor/major faults, name and user of every tracked process,
 * read in one pass over the tasks. */
static int read_tasks(Collector *c) {
        _cleanup_close_ int fd = -1;
        size_t used = 0, n;

        fd = bpf_iter_create(bpf_link__fd(c->iter_link));
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t k;

                if (used == c->records_capacity * sizeof(*c->records)) {
                        size_t cap = c->records_capacity ? c->records_capacity * 2 : 256;
                        struct ts_task_record *p = reallocarray(c->records, cap, sizeof(*p));

                        if (!p)
                                return -ENOMEM;
                        c->records = p;
                        c->records_capacity = cap;
                }
                k = read(fd, (char *) c->records + used, c->records_capacity * sizeof(*c->records) - used);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                used += (size_t) k;
        }

        n = used / sizeof(*c->records);
        for (size_t i = 0; i < n; i++) {
                const struct ts_task_record *rec = &c->records[i];
                CollectorProc *p = proc_find(c, rec->tgid, rec->start_time);
                bool changed;

                /* Not drained yet (first counted since): next tick. */
                if (!p)
                        continue;
                changed = proc_set_ident(p, rec->uid, rec->comm);
                changed = account_minmaj(p, rec->min_flt, rec->maj_flt) || changed;
                if (changed) {
                        int r = touch(c, p);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Reads a hash keyed by process in batches of BATCH_ENTRIES and hands each entry to fn. */
static int for_each_entry(Collector *c, struct bpf_map *map, size_t value_size,
                          int (*fn)(Collector *c, const struct ts_proc_key *key, const void *value, uint64_t now),
                          uint64_t now) {
        struct ts_proc_key in_batch, out_batch;
        bool first = true, done = false;
        int r;

        while (!done) {
                __u32 count = BATCH_ENTRIES;

                r = bpf_map_lookup_batch(bpf_map__fd(map), first ? NULL : &in_batch, &out_batch, c->batch_keys,
                                         c->batch_values, &count, NULL);
                if (r < 0) {
                        /* ENOENT: this was the last batch (count may still be > 0). */
                        if (errno != ENOENT)
                                return -errno;
                        done = true;
                }
                for (__u32 i = 0; i < count; i++) {
                        r = fn(c, &c->batch_keys[i], (const char *) c->batch_values + i * value_size, now);
                        if (r < 0)
                                return r;
                }
                in_batch = out_batch;
                first = false;
        }
        return 0;
}

/* One entry of the per-CPU fallback hash: n_cpus values. */
static int drain_hash_entry(Collector *c, const struct ts_proc_key *key, const void *value, uint64_t now) {
        const struct ts_proc *v = value;
        const struct ts_ident *id = NULL;
        struct ts_counters sum = {};
        CollectorProc *p;
        int r;

        for (int cpu = 0; cpu < c->n_cpus; cpu++) {
                if (!id && v[cpu].id.start_time)
                        id = &v[cpu].id;
                counters_sum(&v[cpu].c, &sum);
        }
        r = proc_get(c, key->tgid, key->start_time, id, now, &p);
        if (r < 0)
                return r;
        return account_counters(c, p, &sum, &p->hash_seen, now);
}

static void traps_from_bpf(const struct ts_traps *t, Traps *ret) {
        memcpy(ret->vector, t->vector, sizeof(t->vector));
        ret->vector[TRAP_VECTOR_UNKNOWN] = t->vector_unknown;
        memcpy(ret->signal, t->signal, sizeof(t->signal));
}

static int drain_traps_entry(Collector *c, const struct ts_proc_key *key, const void *value, uint64_t now) {
        Traps cur, *seen;
        CollectorProc *p;
        bool any = false;
        int r;

        r = proc_get(c, key->tgid, key->start_time, NULL, now, &p);
        if (r < 0)
                return r;
        if (!p->traps_seen && !(p->traps_seen = calloc(1, sizeof(Traps))))
                return -ENOMEM;
        seen = p->traps_seen;
        traps_from_bpf(value, &cur);
        for (size_t k = 0; k < ELEMENTSOF(cur.vector); k++) {
                p->traps_delta.vector[k] += cur.vector[k] - seen->vector[k];
                any = any || cur.vector[k] != seen->vector[k];
        }
        for (size_t s = 0; s < FAULT_SIGNALS; s++)
                for (size_t k = 0; k < SI_CODE_SLOTS; k++) {
                        p->traps_delta.signal[s][k] += cur.signal[s][k] - seen->signal[s][k];
                        any = any || cur.signal[s][k] != seen->signal[s][k];
                }
        *seen = cur;
        if (!any)
                return 0;
        p->has_traps_delta = true;
        p->last_counted_usec = now;
        return touch(c, p);
}

/* Applies this tick's lifecycle events, in the order they happened. Runs after the maps were
 * drained, so every process they name that was counted is known by now. */
static int handle_events(Collector *c) {
        int r = 0;

        for (size_t i = 0; i < c->n_events && r >= 0; i++) {
                LifecycleEvent *e = &c->events[i];
                struct ts_proc_key key = { .tgid = e->tgid, .start_time = e->start_time };
                CollectorProc *p = proc_find(c, e->tgid, e->start_time);

                if (!p)
                        continue;

                if (e->type == TS_EVENT_EXEC) {
                        char *cmdline = NULL;

                        /* Counting goes on under the new name. /proc has the whole command
                         * line while the process lives; the event's copy is cut at
                         * TS_ARGS_LEN but survives a process that is already gone. */
                        memcpy(p->info.comm, e->comm, sizeof(p->info.comm));
                        /* Changing user and then exec'ing is how processes get their user (su,
                         * setpriv, service managers): the uid seen at the first fault may be
                         * the launcher's. */
                        p->info.uid = e->uid;
                        if (proc_read_cmdline(c->proc_fd, p->info.pid, CMDLINE_MAX, &cmdline) < 0) {
                                cmdline = e->cmdline;
                                e->cmdline = NULL;
                        }
                        free(p->info.cmdline);
                        p->info.cmdline = cmdline;
                        r = touch(c, p);
                        continue;
                }

                /* Exit. The maps were drained after this event was read, and a dead process
                 * counts no more: its counts are complete. Remove its entries so the maps stay
                 * bounded (its slot was freed when drained, being marked exited). The event
                 * has the final figures, name and user. */
                (void) account_minmaj(p, e->min_flt, e->maj_flt);
                (void) proc_set_ident(p, e->uid, e->comm);
                (void) bpf_map_delete_elem(bpf_map__fd(c->skel->maps.processes), &key);
                (void) bpf_map_delete_elem(bpf_map__fd(c->skel->maps.traps), &key);
                r = proc_retire(c, p);
        }
        events_clear(c);
        return r;
}

/* Processes whose exit went unseen (ring buffer full, or no exit tracepoint) would stay tracked
 * forever: every GC_INTERVAL_USEC, retire those not counted for that long whose /proc entry is
 * gone. */
typedef struct GcWalk {
        Collector *c;
        uint64_t now;
        CollectorProc **victims;
        size_t n, capacity;
        int error;
} GcWalk;

static void gc_visit(const void *node, VISIT which, void *userdata) {
        CollectorProc *p = *(CollectorProc *const *) node;
        GcWalk *w = userdata;
        ProcStat st;
        int r;

        if (which != postorder && which != leaf)
                return;
        if (w->now - p->last_counted_usec < GC_INTERVAL_USEC)
                return;
        if (proc_stat(w->c, p, &st) >= 0)
                return;
        r = append((void **) &w->victims, &w->n, &w->capacity, sizeof(p), &p);
        if (r < 0)
                w->error = r;
}

static int gc(Collector *c, uint64_t now) {
        GcWalk w = { .c = c, .now = now };
        int r = 0;

        if (now - c->last_gc_usec < GC_INTERVAL_USEC)
                return 0;
        c->last_gc_usec = now;
        /* Collect first, retire after: retiring changes the tree being walked. */
        twalk_r(c->procs, gc_visit, &w);
        for (size_t i = 0; i < w.n && r >= 0; i++) {
                CollectorProc *p = w.victims[i];
                struct ts_proc_key key = { .tgid = p->info.pid, .start_time = p->info.start_time };

                /* Drained this tick already; nothing of it is left to count. */
                if (p->slot >= 0)
                        slot_free(c, (uint32_t) p->slot);
                (void) bpf_map_delete_elem(bpf_map__fd(c->skel->maps.processes), &key);
                (void) bpf_map_delete_elem(bpf_map__fd(c->skel->maps.traps), &key);
                r = proc_retire(c, p);
        }
        free(w.victims);
        return r < 0 ? r : w.error;
}

int collector_drain(Collector *c, uint64_t now_usec, const ProcessSample **ret_samples, size_t *ret_n) {
        size_t n = 0;
        int r;

        /* Last tick's samples are stored by now: what they pointed to is spent. */
        for (size_t i = 0; i < c->n_touched; i++) {
                c->touched[i]->traps_delta = (Traps) {};
                c->touched[i]->has_traps_delta = false;
        }
        c->n_touched = 0;
        for (size_t i = 0; i < c->n_dead; i++)
                proc_free(c->dead[i]);
        c->n_dead = 0;

        /* Lifecycle events first, then the maps: every count of a process whose exit we saw is
         * in the maps by the time we read them. (Events are also read as they arrive, see
         * collector_read_events(), so the ring buffer does not fill up between ticks.) */
        r = collector_read_events(c);
        if (r < 0)
                return r;
        if ((r = drain_slots(c, now_usec)) < 0 ||
            (r = for_each_entry(c, c->skel->maps.processes, sizeof(struct ts_proc) * (size_t) c->n_cpus,
                                drain_hash_entry, now_usec)) < 0 ||
            (r = for_each_entry(c, c->skel->maps.traps, sizeof(struct ts_traps), drain_traps_entry, now_usec)) < 0)
                return r;

        /* Minor/major faults of the processes still running, from the kernel's accounting: of
         * every tracked process from the task iterator, else of the active ones from /proc. */
        if (c->iter_link) {
                r = read_tasks(c);
                if (r < 0)
                        return r;
        } else
                for (size_t i = 0; i < c->n_touched; i++) {
                        CollectorProc *p = c->touched[i];
                        ProcStat st;

                        if (proc_stat(c, p, &st) >= 0)
                                (void) account_minmaj(p, st.minflt, st.majflt);
                }
        if ((r = handle_events(c)) < 0 || (r = gc(c, now_usec)) < 0)
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
                c->samples[n++] = (ProcessSample) {
                        .process = &p->info,
                        .delta = p->delta,
                        .traps = p->has_traps_delta ? &p->traps_delta : NULL,
                };
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

typedef struct CountUid {
        uint32_t uid;
        size_t n;
} CountUid;

static void count_uid_visit(const void *node, VISIT which, void *userdata) {
        const CollectorProc *p = *(CollectorProc *const *) node;
        CountUid *count = userdata;

        if (which == postorder || which == leaf)
                count->n += p->info.uid == count->uid;
}

size_t collector_n_tracked_uid(Collector *c, uint32_t uid) {
        CountUid count = { .uid = uid };

        twalk_r(c->procs, count_uid_visit, &count);
        return count.n;
}

int collector_read_events(Collector *c) {
        int r = ring_buffer__consume(c->ringbuf);

        return r < 0 ? r : 0;
}

bool collector_event_buffer_valid(uint64_t bytes) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);

        return bytes >= page && bytes <= (UINT64_C(1) << 30) && is_power_of_two((uint32_t) bytes);
}

size_t collector_drops(Collector *c, CollectorDrop ret[static COLLECTOR_DROP_KINDS]) {
        int fd = bpf_map__fd(c->skel->maps.drops);

        _Static_assert(COLLECTOR_DROP_KINDS == TS_DROP_MAX, "every drop kind of bpf/trapstat.h is reported");
        for (uint32_t k = 0; k < TS_DROP_MAX; k++) {
                uint64_t values[c->n_cpus];

                ret[k] = (CollectorDrop) { .kind = drop_kinds[k] };
                if (bpf_map_lookup_elem(fd, &k, values) < 0)
                        continue;
                for (int i = 0; i < c->n_cpus; i++)
                        ret[k].count += values[i];
        }
        return TS_DROP_MAX;
}

uint64_t collector_drops_total(Collector *c) {
        CollectorDrop drops[COLLECTOR_DROP_KINDS];
        uint64_t total = 0;

        for (size_t i = 0, n = collector_drops(c, drops); i < n; i++)
                total += drops[i].count;
        return total;
}
