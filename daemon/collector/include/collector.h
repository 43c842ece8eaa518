/* SPDX-License-Identifier: MIT */
#pragma once

/* The collector owns the BPF programs and maps. Every tick it drains the in-kernel counters
 * into per-process deltas; on a process's exit it drains it one last time and removes its
 * map entry so the maps stay bounded. This is its whole interface; the collector-*.h headers
 * are its parts, internal to it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "counters.h"
#include "sites.h"

typedef struct Collector Collector;

typedef struct CollectorConfig {
        uint32_t slots;         /* counting slots, a power of two; 0: default */
        uint32_t max_processes; /* capacity of the in-kernel fallback and trap maps; 0: default */
        /* A slot's owner that has not counted for this long gives the slot up to a process that
         * counts in the fallback hash; 0: default (COLLECTOR_DEFAULT_SLOT_IDLE_USEC);
         * COLLECTOR_SLOT_IDLE_ANY: any owner, at once (slots change hands every tick: a test of
         * the hand-over, not a setting for a host). */
        uint64_t slot_idle_usec;
        uint32_t event_buffer;  /* bytes of the lifecycle event ring buffer; 0: default (4 MiB) */
        uint32_t max_sites;     /* capacity of the in-kernel site map; 0: default */
        uint32_t max_sites_per_process; /* of it, one process's share per tick; 0: default */
        uint32_t max_sites_per_user;    /* one unprivileged user's share per tick; 0: max_sites / 4 */
        /* Entries only root and group trapstat may take; 0: max_sites / 8;
         * COLLECTOR_SITE_RESERVE_NONE: none. Less than max_sites. */
        uint32_t site_reserve;
        /* Lines of /proc/PID/maps read per tick to name sites whose VMA lookup failed; 0: default
         * (COLLECTOR_DEFAULT_SITE_MAPS_LINES); COLLECTOR_SITE_MAPS_LINES_NONE: none. */
        uint32_t site_maps_lines;
        /* One in fault_sample user page faults of a process on a CPU records its site: a power
         * of two; COLLECTOR_FAULT_SAMPLE_OFF for none; 0: default (COLLECTOR_DEFAULT_FAULT_SAMPLE). */
        uint32_t fault_sample;
        /* Symbols parsed for one uid in a minute: files and bytes of symbol tables; 0: default
         * (COLLECTOR_SYMBOL_*_PER_MINUTE_DEFAULT below). */
        uint64_t symbol_files_per_minute;
        uint64_t symbol_bytes_per_minute;
        int proc_fd;            /* the proc root (borrowed) */
        const char *disable;    /* comma-separated source names not to use; NULL: none */
        const char *enable;     /* those off by default to use (collector_source_off_by_default()) */
        /* trapstatd --enable-delay-accounting: the manager turns the kernel's delay accounting on
         * before the collector starts (collector_enable_delay_accounting()). */
        bool enable_delay_accounting;
        /* The BPF object to run, "full", "noloop" or "base"; NULL: the richest the kernel can
         * (trapstatd --probe). One the kernel cannot run fails collector_new() with -ENOEXEC. */
        const char *bpf_object;
} CollectorConfig;

#define COLLECTOR_DEFAULT_SLOT_IDLE_USEC (30 * UINT64_C(1000000))
#define COLLECTOR_SLOT_IDLE_ANY UINT64_MAX
#define COLLECTOR_FAULT_SAMPLE_OFF UINT32_MAX
#define COLLECTOR_SITE_RESERVE_NONE UINT32_MAX
#define COLLECTOR_SITE_MAPS_LINES_NONE UINT32_MAX
/* About 16 MiB of text, some 50 ms: four processes with the most mappings the kernel allows. */
#define COLLECTOR_DEFAULT_SITE_MAPS_LINES 262144U
/* Largest --fault-sample period. */
#define COLLECTOR_FAULT_SAMPLE_MAX (UINT32_C(1) << 30)
/* What CollectorConfig's members are when 0 (the BPF object's defaults, bpf/trapstat.h; its
 * TS_DEFAULT_* are asserted equal in collector.c): for --help, and the checks of the options. */
#define COLLECTOR_DEFAULT_SLOTS 8192
#define COLLECTOR_DEFAULT_MAX_PROCESSES 16384
#define COLLECTOR_DEFAULT_EVENT_BUFFER (4U << 20)
#define COLLECTOR_DEFAULT_MAX_SITES 16384
#define COLLECTOR_DEFAULT_MAX_SITES_PER_PROCESS 1024
#define COLLECTOR_DEFAULT_FAULT_SAMPLE 512
/* What CollectorConfig.symbol_files_per_minute and symbol_bytes_per_minute are when 0. */
#define COLLECTOR_SYMBOL_FILES_PER_MINUTE_DEFAULT 64
#define COLLECTOR_SYMBOL_BYTES_PER_MINUTE_DEFAULT (64ULL * 1024 * 1024)

typedef struct CollectorSource {
        const char *name;
        bool active;
        const char *reason; /* why inactive; NULL when active */
} CollectorSource;

/* Opens, loads and attaches the BPF programs. A failure is returned, not logged (the caller
 * logs it once): -ENOTSUP when no page fault source could attach, -EINVAL for a config out of
 * range or when config->disable and config->enable are not valid lists (collector_sources_choose()),
 * else what libbpf or the kernel said.
 * A source that cannot be used is no failure: it is logged here, as a warning. */
int collector_new(const CollectorConfig *config, Collector **ret);
Collector *collector_free(Collector *c);

/* A valid --event-buffer size: a power of two from the page size to 1 GiB. */
bool collector_event_buffer_valid(uint64_t bytes);
/* Whether config->disable and config->enable are lists collector_new() takes: 0, or -EINVAL for an
 * unknown name or a source in both lists with *ret_error the line to show (to free), -ENOMEM. */
int collector_config_check_sources(const CollectorConfig *config, char **ret_error);

/* fd to watch for readability: lifecycle events are waiting in the ring buffer. BPF wakes it
 * when the buffer is 1/16 full; a tick reads it too. */
int collector_event_fd(Collector *c);
/* Takes the waiting lifecycle events out of the ring buffer, to be applied at the next drain. */
int collector_read_events(Collector *c);

/* What one tick drained. It and what it points to stay valid until the next tick begins or
 * collector_free(). */
typedef struct CollectorTick {
        /* Every process with a non-zero delta, that exec'd or that exited, with its sites. */
        const ProcessSample *samples;
        size_t n_samples;
        /* Symbols the symbol worker found since the last drain for sites of earlier ticks, stored
         * without one: SiteCounts with object, dev, ino, version, offset and symbol set (count 0),
         * for store_sites_fill(). This tick's samples already carry them. */
        const SiteCount *fills;
        size_t n_fills;
} CollectorTick;

/* Drains everything counted since the last tick, and the symbols found for what was counted
 * before: a tick at now_usec. It comes in parts, so that its reads of /proc (one for every process
 * active in the tick) need not hold an event loop for their whole length:
 *   collector_tick_begin()  lifecycle events; what the counts' maps hold to be read is taken;
 *   collector_tick_step()   the counts' maps, then the sites, then the reads of the active
 *                           processes' accounting, in steps of about budget_usec each (and a
 *                           batch or a piece more; each kind begins a step of its own); > 0:
 *                           call again, 0: what is left is the end's;
 *   collector_tick_end()    the task iterator's share, the lifecycle events again, applied in
 *                           order in steps of budget_usec (a mass exit is thousands); > 0: call
 *                           again; 0: the tick's samples are in *ret; or a step's failure.
 * Between them the caller may do other work, collector_read_events() too, but no other tick.
 * A failed begin or end leaves no tick under way. */
int collector_tick_begin(Collector *c, uint64_t now_usec);
int collector_tick_step(Collector *c, uint64_t budget_usec);
int collector_tick_end(Collector *c, uint64_t budget_usec, CollectorTick *ret);

/* The sources, in the order of their names (GetStatus's sources); delay_accounting's state is
 * the kernel's at the latest tick's start. */
const CollectorSource *collector_sources(Collector *c, size_t *ret_n);
/* Turns the kernel's delay accounting on (writes 1 to kernel.task_delayacct under the proc root
 * proc_fd), for trapstatd --enable-delay-accounting: -ENOENT where the kernel has no such sysctl
 * (before 5.14, or without CONFIG_TASK_DELAY_ACCT), -EPERM without CAP_SYS_ADMIN, -EROFS where
 * /proc/sys is read-only (a sandbox). It stays on when trapstatd stops: it is the machine's. */
int collector_enable_delay_accounting(int proc_fd);
/* What the kernel's capabilities and the configuration allow beyond the counts, each active or
 * inactive with the capability it misses: counting_slots, fault_sites, trap_sites, vma_lookup,
 * task_reads. */
const CollectorSource *collector_features(Collector *c, size_t *ret_n);

/* The kernel's BPF capabilities as probed at start. */
typedef struct CollectorCapability {
        const char *name;  /* e.g. "bpf_loop" */
        bool present;
        const char *since; /* the Linux release that brought it, e.g. "5.17" */
} CollectorCapability;
#define COLLECTOR_CAPABILITIES 10
size_t collector_capabilities(Collector *c, CollectorCapability ret[static COLLECTOR_CAPABILITIES]);
/* Which BPF object runs: "full", "noloop" or "base" (the richest the capabilities allow). */
const char *collector_bpf_object(Collector *c);
/* trapstatd --probe: probes the kernel and prints its capabilities, the object it can run, the
 * sources that object would load with config and the features, loading nothing but the probes.
 * -ENOEXEC when the kernel can run no object (the table says what it misses). */
int collector_probe_dump(const CollectorConfig *config, FILE *f);
/* One in this many user page faults of a process on a CPU records its site; 0 when fault sites
 * are off (GetStatus faultSamplePeriod). */
uint32_t collector_fault_sample_period(Collector *c);
/* Which parts of Faults that may not be are counted (read / write / exec / protection, and
 * majorByCause): the known the JSON of the counters is written with (faults_to_json()). Fixed
 * once the collector is started. */
FaultsKnown collector_faults_known(Collector *c);
size_t collector_n_tracked(Collector *c);

/* A process's innermost pid namespace, as the kernel has it (struct pid's last level): that of a
 * varlink peer, whose view is scoped to it. */
typedef struct CollectorPidNs {
        uint32_t tgid;       /* in the initial pid namespace */
        uint32_t level;      /* the namespace's: 0 for the initial one */
        uint64_t start_time; /* the process's start, ns since boot */
        uint32_t ns;         /* the namespace's inode number */
        uint32_t pid;        /* the process's pid there */
} CollectorPidNs;
/* Of the process pidfd refers to, read by BPF (a task iterator attached to the pidfd, in the
 * object loaded where the kernel has bpf_task_from_pid(), Linux 6.2). -EOPNOTSUPP where that
 * object is not loaded; -ESRCH when the process is gone. */
int collector_pidns(Collector *c, int pidfd, CollectorPidNs *ret);
/* What the last drain read from the kernel, in records: counting slots that changed, hash
 * entries, task records of the sweep, /proc/PID/stat of the processes active in it. It follows
 * the processes that counted in the tick, not those tracked (GetStatus tickRecordsRead). */
uint64_t collector_tick_records(Collector *c);
/* Counting slots idle owners gave up since the start, each to a process that counted in the
 * fallback hash (CollectorConfig.slot_idle_usec; GetStatus slotsTaken). */
uint64_t collector_slots_taken(Collector *c);
/* Of them, those of one user (uid >= 0) in one pid namespace (pidns not 0): what a caller of
 * GetStatus who sees only those is told. */
size_t collector_n_tracked_visible(Collector *c, int64_t uid, uint32_t pidns);
/* What could not be counted since the start, by kind. */
typedef struct CollectorDropKind {
        const char *name; /* e.g. "fault_map_full" */
        const char *lost; /* what one occurrence lost, in words */
} CollectorDropKind;

typedef struct CollectorDrop {
        CollectorDropKind kind;
        uint64_t count;
} CollectorDrop;

/* The kinds BPF counts (enum ts_drop), then those of user space. */
#define COLLECTOR_BPF_DROP_KINDS 11
#define COLLECTOR_DROP_KINDS (COLLECTOR_BPF_DROP_KINDS + 2)
/* Fills ret with every kind, also those at zero; returns how many. */
size_t collector_drops(Collector *c, CollectorDrop ret[static COLLECTOR_DROP_KINDS]);

/* The drops of one user's processes (real uid), of the kinds BPF counts (enum ts_drop order). */
typedef struct CollectorUserDrops {
        uint32_t uid;
        uint64_t count[COLLECTOR_BPF_DROP_KINDS];
} CollectorUserDrops;

/* See collector_bpf_user_drops(). */
int collector_user_drops(Collector *c, int64_t uid, CollectorUserDrops **ret, size_t *ret_n);
/* The kind CollectorUserDrops.count[kind] counts. */
CollectorDropKind collector_drop_kind(unsigned kind);
