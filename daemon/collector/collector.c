/* SPDX-License-Identifier: MIT */
/* The Collector: sets up its parts, drains them every tick in the order that keeps the counts
 * exact, and answers what GetStatus asks. The work is theirs:
 *   collector-bpf.c    the BPF object and the event sources: open, configure, load, attach, fallbacks
 *   collector-read.c   the counts' reader: slots, hashes, task iterator, ring buffer events
 *   collector-sites.c  the site reader: the site hash, files' paths, symbols (with the symbol worker)
 *   collector-procs.c  the process table: identity, deltas, slots, garbage collection, samples
 *   collector-util.c   the pure logic of them, unit-tested
 *
 * Logging: the collector returns failures as negative errno and does not log them; its caller,
 * which decides what a failure means (the manager: exit at start, skip a tick later), logs it
 * once. What the collector decides to live with, a source it cannot use, it logs itself, since
 * nobody else learns of it. libbpf's messages go through common/log.c with their priorities. */
#include "collector.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector-bpf.h"
#include "collector-procs.h"
#include "collector-read.h"
#include "collector-sites.h"
#include "collector-util.h"
#include "delayacct.h"
#include "kernel-probe.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"

struct Collector {
        CollectorBpf *bpf;
        ProcTable procs;
        CollectorReader reader;
        SiteReader sites;
        bool mapping_refusal_logged;
        /* The tick under way, between collector_tick_begin() and collector_tick_end(). */
        bool in_tick;
        uint64_t tick_usec;    /* its time */
        size_t n_before_drain; /* lifecycle events read before its maps were drained */
        bool maps_drained;     /* the counts' maps, in the first steps */
        bool sites_drained;
        bool end_begun;        /* collector_tick_end() swept and read the events; it applies them */
        bool swept;            /* and the sweep it read a piece of ended */
        int tick_error;        /* a step's failure, which its end returns */
        uint64_t tick_records; /* what the last tick that ended read: GetStatus's tickRecords */
        DelayAcct delayacct;   /* whether the kernel keeps its delay accounting (source delay_accounting) */
};

static bool is_power_of_two(uint32_t x) {
        return x && !(x & (x - 1));
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Collector *, collector_free);

/* The BPF object's configuration and the sources chosen, from config. */
static int bpf_config_from(const CollectorConfig *config, CollectorBpfConfig *ret, SourceChoice sources[static _SOURCE_MAX]) {
        CollectorBpfConfig bpf_config = {
                .n_slots = config->slots ?: TS_DEFAULT_SLOTS,
                .max_processes = config->max_processes ?: TS_DEFAULT_MAX_PROCESSES,
                .event_buffer = config->event_buffer ?: TS_DEFAULT_EVENT_BUFFER,
                .max_sites = config->max_sites ?: TS_DEFAULT_MAX_SITES,
                .max_sites_per_process = config->max_sites_per_process ?: TS_DEFAULT_MAX_SITES_PER_PROCESS,
                .fault_sample = config->fault_sample == COLLECTOR_FAULT_SAMPLE_OFF ? 0
                                : config->fault_sample ?: TS_DEFAULT_FAULT_SAMPLE,
        };
        int r;

        bpf_config.max_sites_per_user =
                config->max_sites_per_user ?: MAX(bpf_config.max_sites / TS_DEFAULT_SITES_PER_USER_DIVISOR, 1U);
        bpf_config.site_reserve = config->site_reserve == COLLECTOR_SITE_RESERVE_NONE ? 0
                                  : config->site_reserve ?: bpf_config.max_sites / TS_DEFAULT_SITE_RESERVE_DIVISOR;
        if (!is_power_of_two(bpf_config.n_slots) || !collector_event_buffer_valid(bpf_config.event_buffer) ||
            bpf_config.site_reserve >= bpf_config.max_sites)
                return -EINVAL;
        bpf_config.object = _BPF_OBJECT_MAX;
        if (config->bpf_object && bpf_object_from_name(config->bpf_object, &bpf_config.object) < 0)
                return -EINVAL;
        r = collector_sources_choose(config->disable, config->enable, sources, NULL);
        if (r < 0)
                return r;
        *ret = bpf_config;
        return 0;
}

int collector_probe_dump(const CollectorConfig *config, FILE *f) {
        CollectorBpfConfig bpf_config;
        SourceChoice sources[_SOURCE_MAX];
        CollectorBpf *b = NULL;
        BpfObject object;
        KernelCap missing;
        KernelCaps caps;
        int r;

        r = bpf_config_from(config, &bpf_config, sources);
        if (r < 0)
                return r;
        kernel_probe(&caps);
        fprintf(f, "%-24s %-5s %s\n", "capability", "has", "since Linux");
        for (KernelCap k = 0; k < _KERNEL_CAP_MAX; k++)
                fprintf(f, "%-24s %-5s %s\n", kernel_cap_name(k), caps.has[k] ? "yes" : "no", kernel_cap_since(k));
        if (kernel_caps_object(&caps, libbpf_num_possible_cpus(), bpf_config.object, &object, &missing) < 0) {
                fprintf(f, "\nobject: none: %s needs %s (Linux %s)\n",
                        bpf_config.object == _BPF_OBJECT_MAX ? "counting" : bpf_object_name(bpf_config.object),
                        kernel_cap_name(missing), kernel_cap_since(missing));
                return -ENOEXEC;
        }
        r = collector_bpf_open(&bpf_config, &b);
        if (r < 0)
                return r;
        collector_bpf_choose_sources(b, sources);
        collector_bpf_dump(b, f);
        collector_bpf_free(b);
        return 0;
}

#define DELAYACCT_OFF "the kernel keeps none: "
#define DELAYACCT_HOW "sysctl kernel.task_delayacct=1, trapstatd --enable-delay-accounting or the kernel command line's delayacct turns it on"

/* The source delay_accounting now: active while the kernel keeps it, which the sysctl can change
 * at any time. What the processes' delays grew by is counted whenever the source is usable
 * (while the kernel keeps none they do not grow); replies tell it only while it is active. */
static void delay_accounting_refresh(Collector *c) {
        int on;

        if (!c->bpf->delayacct_usable)
                return;
        on = delayacct_state(&c->delayacct);
        if (on > 0)
                collector_bpf_set_source(c->bpf, SOURCE_DELAY_ACCOUNTING, 0, NULL);
        else if (on < 0)
                collector_bpf_set_source(c->bpf, SOURCE_DELAY_ACCOUNTING, on, "reading " DELAYACCT_SYSCTL);
        else if (c->delayacct.fd < 0)
                collector_bpf_set_source(c->bpf, SOURCE_DELAY_ACCOUNTING, -ECANCELED,
                                         DELAYACCT_OFF "the kernel was booted with nodelayacct");
        else
                collector_bpf_set_source(c->bpf, SOURCE_DELAY_ACCOUNTING, -ECANCELED,
                                         DELAYACCT_OFF "kernel.task_delayacct is 0 (" DELAYACCT_HOW ")");
}

/* Never fails: without the sysctl's state the source is inactive, with the reason. */
static int delay_accounting_init(Collector *c, int proc_fd) {
        int r;

        c->procs.stall_counted = c->bpf->delayacct_usable;
        if (!c->bpf->delayacct_usable)
                return 0;
        r = delayacct_open(proc_fd, &c->delayacct);
        if (r < 0) {
                /* Something the collector lives with: the counts do not need it. */
                log_warning_errno(r, "Failed to read whether the kernel keeps delay accounting (" DELAYACCT_SYSCTL
                                     "), not reading it: %m");
                collector_bpf_set_source(c->bpf, SOURCE_DELAY_ACCOUNTING, r, "reading " DELAYACCT_SYSCTL);
                c->bpf->delayacct_usable = c->procs.stall_counted = false;
                return 0;
        }
        delay_accounting_refresh(c);
        return 0;
}

int collector_enable_delay_accounting(int proc_fd) {
        return delayacct_enable(proc_fd);
}

int collector_new(const CollectorConfig *config, Collector **ret) {
        _cleanup_(collector_freep) Collector *c = NULL;
        CollectorBpfConfig bpf_config;
        SourceChoice sources[_SOURCE_MAX];
        int r;

        r = bpf_config_from(config, &bpf_config, sources);
        if (r < 0)
                return r;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->delayacct.fd = -1;

        /* As libbpf-tools do: open and configure, choose what to load, load, attach. */
        r = collector_bpf_open(&bpf_config, &c->bpf);
        if (r < 0)
                return r;
        collector_bpf_choose_sources(c->bpf, sources);
        if ((r = collector_bpf_load(c->bpf)) < 0 || (r = collector_bpf_attach(c->bpf)) < 0)
                return r;

        /* Counting has started: a process older than this counts its minor/major faults from its
         * first reading on. */
        r = proc_table_init(&c->procs, config->proc_fd, bpf_config.n_slots);
        if (r < 0)
                return r;
        r = reader_init(&c->reader, c->bpf, &c->procs,
                        config->slot_idle_usec == COLLECTOR_SLOT_IDLE_ANY ? 0
                        : config->slot_idle_usec ?: COLLECTOR_DEFAULT_SLOT_IDLE_USEC);
        if (r < 0)
                return r;
        r = site_reader_init(&c->sites, c->bpf, &c->procs,
                             config->site_maps_lines == COLLECTOR_SITE_MAPS_LINES_NONE ? 0
                             : config->site_maps_lines ?: COLLECTOR_DEFAULT_SITE_MAPS_LINES,
                             &(SymbolWorkerConfig) { .files_per_minute = config->symbol_files_per_minute,
                                                     .bytes_per_minute = config->symbol_bytes_per_minute });
        if (r < 0)
                return r;
        r = collector_bpf_watch_events(c->bpf, reader_take_event, &c->reader);
        if (r < 0)
                return r;
        r = delay_accounting_init(c, config->proc_fd);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(c);
        return 0;
}

Collector *collector_free(Collector *c) {
        if (!c)
                return NULL;
        /* The BPF object first: the ring buffer's callback uses the reader. */
        collector_bpf_free(c->bpf);
        site_reader_done(&c->sites);
        reader_done(&c->reader);
        proc_table_done(&c->procs);
        delayacct_close(&c->delayacct);
        free(c);
        return NULL;
}

/* collector.h's defaults are the BPF object's. */
#define SAME_DEFAULT(name) _Static_assert(COLLECTOR_DEFAULT_##name == TS_DEFAULT_##name, #name)
SAME_DEFAULT(SLOTS);
SAME_DEFAULT(MAX_PROCESSES);
SAME_DEFAULT(EVENT_BUFFER);
SAME_DEFAULT(MAX_SITES);
SAME_DEFAULT(MAX_SITES_PER_PROCESS);
SAME_DEFAULT(FAULT_SAMPLE);

int collector_config_check_sources(const CollectorConfig *config, char **ret_error) {
        SourceChoice sources[_SOURCE_MAX];

        return collector_sources_choose(config->disable, config->enable, sources, ret_error);
}

bool collector_event_buffer_valid(uint64_t bytes) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);

        return bytes >= page && bytes <= (UINT64_C(1) << 30) && is_power_of_two((uint32_t) bytes);
}

int collector_event_fd(Collector *c) {
        return ring_buffer__epoll_fd(c->bpf->ringbuf);
}

int collector_read_events(Collector *c) {
        int r = ring_buffer__consume(c->bpf->ringbuf);

        return r < 0 ? r : 0;
}

/* Processes whose exit went unseen would stay tracked forever: those found gone are forgotten
 * here as an exit event would have it. With the task iterator, once its sweep ended (swept). */
static int collect_garbage(Collector *c, uint64_t now, bool swept) {
        _cleanup_free_ CollectorProc **gone = NULL;
        size_t n;
        int r = 0, error;

        if (c->bpf->iter_link && !swept)
                return 0;
        error = proc_table_vanished(&c->procs, now, swept ? c->reader.sweep_generation : 0,
                                    swept ? c->reader.sweep_started_usec : 0, &gone, &n);
        for (size_t i = 0; i < n && r >= 0; i++) {
                CollectorProc *p = gone[i];

                /* Drained this tick already; nothing of it is left to count. */
                if (p->slot >= 0)
                        reader_free_slot(&c->reader, (uint32_t) p->slot);
                /* Both hashes: a process gone without its exit event read is rare, and the
                 * sweep that finds it no storm's path. */
                collector_bpf_forget(c->bpf, p->info.pid, p->info.start_time, true, true);
                r = proc_table_retire(&c->procs, p);
        }
        return r < 0 ? r : error;
}

int collector_tick_begin(Collector *c, uint64_t now_usec) {
        int r;

        assert(!c->in_tick);
        delay_accounting_refresh(c);
        proc_table_begin_tick(&c->procs);
        c->reader.tick_records = 0;
        c->tick_usec = now_usec;

        /* Lifecycle events first, then the maps: every count of a process whose exit we saw is
         * in the maps by the time we read them. (Events are also read as they arrive, see
         * collector_read_events(), so the ring buffer does not fill up between ticks.) */
        r = collector_read_events(c);
        if (r < 0)
                return r;
        c->n_before_drain = c->reader.n_events;
        /* The exits in hand mark their processes, whose /proc there is no point in reading. */
        if ((r = reader_mark_exiting(&c->reader)) < 0 || (r = reader_drain_maps_begin(&c->reader)) < 0)
                return r;
        c->maps_drained = false;
        c->sites_drained = false;
        c->end_begun = false;
        c->tick_error = 0;
        c->in_tick = true;
        return 0;
}

/* A step's reads of /proc come in pieces of this many, the clock read between them. */
#define PROC_READS_PER_PIECE 32

/* A piece of the minor/major faults of this tick's active processes: read in the kernel where it
 * can (task-reads.bpf.o, TS_TASK_READS at a time), else from their /proc/PID/stat. */
static int read_active(Collector *c, bool *ret_done) {
        if (c->bpf->reads_link)
                return reader_read_active(&c->reader, ret_done);
        *ret_done = proc_table_read_minmaj(&c->procs, PROC_READS_PER_PIECE, &c->reader.tick_records);
        return 0;
}

/* The deadline of a step begun at start (CLOCK_MONOTONIC) with budget_usec; UINT64_MAX: none. */
static uint64_t step_deadline(uint64_t start, uint64_t budget_usec) {
        return budget_usec == UINT64_MAX ? UINT64_MAX : start + budget_usec;
}

int collector_tick_step(Collector *c, uint64_t budget_usec) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        bool done;
        int r;

        assert(c->in_tick);
        if (c->tick_error < 0)
                return 0;
        /* The counts' maps first, in steps of the budget: when thousands of processes appear at
         * once, each is new to the process table (about 1.7 us each). */
        if (!c->maps_drained) {
                r = reader_drain_maps_step(&c->reader, c->tick_usec, step_deadline(start, budget_usec));
                if (r < 0)
                        c->tick_error = r;
                c->maps_drained = r != 0;
                return r < 0 ? 0 : 1;
        }
        /* The sites after the counts' maps, so that their processes are known; in steps of their
         * own (in a storm, 2000 short processes' sites take 3-6 ms of CPU a tick). */
        if (!c->sites_drained) {
                r = site_reader_drain_step(&c->sites, c->tick_usec, step_deadline(start, budget_usec));
                if (r < 0)
                        c->tick_error = r;
                c->sites_drained = r <= 0;
                return r < 0 ? 0 : 1;
        }
        /* Minor/major faults of the processes still running, from the kernel's accounting: of
         * those active in this tick (read_active()), and a share of all of them from the task
         * iterator's sweep (at the tick's end). The cost follows the processes that count, not
         * those that exist. The command lines and units first, since each read touches its
         * process, which is then read too. Nothing else touches a process until the end. */
        for (size_t pieces = 0;; pieces++) {
                done = proc_table_read_info(&c->procs, PROC_READS_PER_PIECE);
                if (done && (r = read_active(c, &done)) < 0) {
                        c->tick_error = r;
                        return 0;
                }
                /* A few reads (at most a piece): the end may follow in this turn; after more,
                 * it comes in a turn of its own. */
                if (done)
                        return pieces > 0;
                if (now_usec(CLOCK_MONOTONIC) - start >= budget_usec)
                        return 1;
        }
}

/* The task iterator's share, and the events read again. */
static int tick_end_begin(Collector *c) {
        int r;

        c->swept = false;
        if (c->bpf->iter_link) {
                r = reader_sweep_tasks(&c->reader, c->tick_usec, &c->swept);
                if (r < 0)
                        return r;
        }
        /* An exec between the first read and the drain has counts of the new program in this
         * tick, which are its unit's. So has one read in a turn of the event loop between the
         * steps, the exits of which wait, as every exit read after the drain does (see
         * reader_apply_events()). */
        return collector_read_events(c);
}

int collector_tick_end(Collector *c, uint64_t budget_usec, CollectorTick *ret) {
        uint64_t now = c->tick_usec, start = now_usec(CLOCK_MONOTONIC);
        CollectorTick t = {};
        int r;

        assert(c->in_tick);
        r = c->tick_error;
        if (r >= 0 && !c->end_begun) {
                c->end_begun = true;
                r = tick_end_begin(c);
        }
        if (r >= 0) {
                r = reader_apply_events(&c->reader, c->n_before_drain, step_deadline(start, budget_usec));
                if (r == 0)
                        return 1; /* events left for the next step */
        }
        /* Done or failed, the tick is over. */
        c->in_tick = false;
        if (r < 0 || (r = collect_garbage(c, now, c->swept)) < 0)
                return r;
        /* Now that exec events gave the processes their users: each pays for its own symbols. */
        site_reader_ask_symbols(&c->sites);
        /* Lived with, so said once: files are read by path only, which a file renamed or deleted
         * since its count, or one in another mount namespace, does not pass. */
        if (c->sites.mapping_refused && !c->mapping_refusal_logged) {
                log_notice("Cannot open the files processes map through /proc/PID/map_files (%s: it needs "
                           "CAP_SYS_ADMIN): symbols are read from the files' paths, so a file renamed, replaced "
                           "or deleted since its site was counted gets none",
                           strerror(-c->sites.mapping_refused));
                c->mapping_refusal_logged = true;
        }
        r = proc_table_samples(&c->procs, now, &t.samples, &t.n_samples);
        if (r < 0)
                return r;
        c->tick_records = c->reader.tick_records;
        t.fills = c->sites.fills;
        t.n_fills = c->sites.n_fills;
        *ret = t;
        return 0;
}

const CollectorSource *collector_sources(Collector *c, size_t *ret_n) {
        *ret_n = _SOURCE_MAX;
        return c->bpf->sources;
}

const CollectorSource *collector_features(Collector *c, size_t *ret_n) {
        *ret_n = _FEATURE_MAX;
        return c->bpf->features;
}

size_t collector_capabilities(Collector *c, CollectorCapability ret[static COLLECTOR_CAPABILITIES]) {
        _Static_assert(COLLECTOR_CAPABILITIES == _KERNEL_CAP_MAX, "one entry per capability");
        for (KernelCap k = 0; k < _KERNEL_CAP_MAX; k++)
                ret[k] = (CollectorCapability) { .name = kernel_cap_name(k), .present = c->bpf->caps.has[k],
                                                 .since = kernel_cap_since(k) };
        return _KERNEL_CAP_MAX;
}

const char *collector_bpf_object(Collector *c) {
        return bpf_object_name(c->bpf->object);
}

uint32_t collector_fault_sample_period(Collector *c) {
        return collector_bpf_fault_sample(c->bpf);
}

FaultsKnown collector_faults_known(Collector *c) {
        /* Only the exception event carries a fault's access kind. */
        return (c->bpf->sources[SOURCE_PAGE_FAULT_USER].active ? FAULTS_KNOWN_ACCESS : 0) |
               (c->bpf->sources[SOURCE_MAJOR_CAUSE].active ? FAULTS_KNOWN_MAJOR_CAUSE : 0) |
               (c->bpf->sources[SOURCE_DELAY_ACCOUNTING].active ? FAULTS_KNOWN_STALL : 0);
}

int collector_pidns(Collector *c, int pidfd, CollectorPidNs *ret) {
        struct ts_pidns_record r;
        int k;

        k = collector_bpf_read_pidns(c->bpf, pidfd, &r);
        if (k < 0)
                return k;
        *ret = (CollectorPidNs) { .tgid = r.tgid, .level = r.level, .start_time = r.start_time, .ns = r.ns,
                                  .pid = r.pid };
        return 0;
}

uint64_t collector_tick_records(Collector *c) {
        return c->tick_records;
}

uint64_t collector_slots_taken(Collector *c) {
        return c->reader.slots_taken;
}

size_t collector_n_tracked(Collector *c) {
        return c->procs.n_procs;
}

size_t collector_n_tracked_visible(Collector *c, int64_t uid, uint32_t pidns) {
        return proc_table_count_visible(&c->procs, uid, pidns);
}

size_t collector_drops(Collector *c, CollectorDrop ret[static COLLECTOR_DROP_KINDS]) {
        size_t n = collector_bpf_drops(c->bpf, ret);

        ret[n++] = (CollectorDrop) {
                .kind = { "symbol_budget",
                          "the symbol of one site not looked up: its user had its share of symbol tables parsed "
                          "this minute (--symbol-files-per-minute, --symbol-bytes-per-minute); the site keeps "
                          "its file and offset" },
                .count = symbol_worker_refused(c->sites.symbol_worker),
        };
        ret[n++] = (CollectorDrop) {
                .kind = { "symbol_unreadable",
                          "the symbol of one site not looked up this time: its file could be opened neither "
                          "through its process's mapping (gone, or /proc/PID/map_files refused) nor by its path "
                          "(gone, another file there, not permitted); the site keeps its file and offset, and its "
                          "next count asks again" },
                .count = symbol_worker_unreadable(c->sites.symbol_worker),
        };
        return n;
}

int collector_user_drops(Collector *c, int64_t uid, CollectorUserDrops **ret, size_t *ret_n) {
        return collector_bpf_user_drops(c->bpf, uid, ret, ret_n);
}

CollectorDropKind collector_drop_kind(unsigned kind) {
        return collector_bpf_drop_kind(kind);
}
