/* SPDX-License-Identifier: MIT */
#pragma once

/* The collector's pure logic: the names of the event sources and the --disable-source and
 * --enable-source lists, the kernel's monotonic counters turned into deltas, the decoding of the
 * ring buffer's lifecycle records, and the arrays they are kept in. No BPF, no /proc, no logging,
 * so tests/unit/test-collector-util.c runs it without privileges. Internal to the daemon
 * (daemon/collector*.c, and trapstatd.c for the lists), not a public API. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "sites.h"
#include "stall.h"
#include "trapstat.h"
#include "traps.h"

/* The event sources, in the order GetStatus lists them. */
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
        SOURCE_FAULT_TIME,    /* PAGE_FAULTS_MIN / PAGE_FAULTS_MAJ: how long each fault took */
        SOURCE_MAJOR_CAUSE,   /* PAGE_FAULTS_MAJ: what each major fault's address mapped */
        /* No program: the kernel's delay accounting, read with the task records. Active while the
         * kernel keeps it (delayacct.h), which can change at any tick. */
        SOURCE_DELAY_ACCOUNTING,
        _SOURCE_MAX
};

/* The name of a source as --disable-source and GetStatus spell it; for a tracepoint, its name. */
extern const char *const collector_source_names[_SOURCE_MAX];

/* Whether a source is used only when --enable-source names it: fault time, which costs more per
 * fault than all the counting (bench/README.md). */
bool collector_source_off_by_default(int source);

/* Parses a comma-separated list of source names into disabled[] (only ever set to true); empty
 * names are skipped, a NULL list is empty. -EINVAL for an unknown name: *ret_unknown (when not
 * NULL) points at it in list, *ret_unknown_len is its length. */
int collector_sources_parse(const char *list, bool disabled[static _SOURCE_MAX], const char **ret_unknown,
                            size_t *ret_unknown_len);

/* What --disable-source and --enable-source leave of a source. */
typedef enum SourceChoice {
        SOURCE_USED,        /* to be loaded, if the kernel has it */
        SOURCE_DISABLED,    /* named by --disable-source */
        SOURCE_NOT_ENABLED, /* off by default and not named by --enable-source */
} SourceChoice;

/* Parses both lists (NULL: none) into a choice per source. -EINVAL for an unknown name or a
 * source in both lists, with *ret_error (when not NULL) the message to show, one line, to be
 * freed; -ENOMEM where even that failed. */
int collector_sources_choose(const char *disable, const char *enable, SourceChoice choice[static _SOURCE_MAX],
                             char **ret_error);

/* A process's counters and fault time on one CPU, or summed: BPF keeps them apart (a slot's fault
 * time is in an array of its own, sized only with fault time on). */
typedef struct ProcCounters {
        struct ts_counters c;
        struct ts_fault_times t;
} ProcCounters;

/* A copy of counters and fault time (NULL: none, zero) BPF may be adding to meanwhile (a slot's,
 * read in place): every member read whole, never torn. The owner is not copied. */
void counters_load(const struct ts_counters *src, const struct ts_fault_times *times, ProcCounters *dst);
/* Adds one CPU's counters to sum, read after user space advanced BPF's tick from `tick` to
 * tick + 1. sum->t.max_ns[0] becomes the longest fault among those this read counts on any CPU so
 * far: those that completed in `tick` after the last read, and those of tick + 1 so far (the
 * flip and the read are apart: a fault that completes in between is counted by this read and
 * stamped tick + 1). *next_max is this CPU's longest of tick + 1 as the last read saw it (0 at
 * first); it is updated. A fault that completes between the last read and the last flip, no
 * longer than one before it, has its count but not its length in the next read: the longest
 * stays the longest of a read, or less, never more. */
void counters_sum(const ProcCounters *v, uint64_t tick, uint64_t *next_max, ProcCounters *sum);
/* What the counters grew by since *seen, which then becomes now; *ret_time the fault time, with
 * now->t.max_ns[0] (as counters_sum() leaves it) as the longest when a fault was timed. */
Faults counters_delta(const ProcCounters *now, ProcCounters *seen, FaultTime *ret_time);

/* The kernel's min_flt/maj_flt of one process already reported. */
typedef struct MinMajSeen {
        uint64_t minflt;
        uint64_t majflt;
        bool baseline; /* started before counting did: the first reading is the baseline */
} MinMajSeen;

/* Adds what the kernel's min_flt/maj_flt grew by to delta. Returns whether they did. */
bool minmaj_account(MinMajSeen *seen, uint64_t minflt, uint64_t majflt, Faults *delta);

/* The kernel's delay accounting of one process already reported: the largest sum seen, cause by
 * cause. A sum can fall for a moment (a thread between PF_EXITING and the kernel moving its delays
 * into signal->stats, bpf/task-faults.h): what it grows by counts only past the largest. */
typedef struct StallSeen {
        Stall max;
        bool baseline; /* started before counting did: the first reading is the baseline */
} StallSeen;

/* Adds what the process's delay accounting (BPF's sums, now) grew by past *seen to delta.
 * Returns whether it did. */
bool stall_account(StallSeen *seen, const struct ts_delays *now, Stall *delta);

/* A trap hash value in the data model's layout. */
void traps_from_bpf(const struct ts_traps *t, Traps *ret);
/* Adds what cur grew by since *seen to delta; *seen then becomes cur. Returns whether anything
 * changed. */
bool traps_account(const Traps *cur, Traps *seen, Traps *delta);

/* A site hash key's kind (TS_SITE_*) as the data model has it: its SiteKind and sampling period
 * (fault_sample for the sampled faults, 1 for traps and major faults), and whether its time counts
 * (not for traps). -EBADMSG for a kind BPF does not write. */
int site_kind_from_bpf(uint8_t kind, uint32_t fault_sample, SiteKind *ret_kind, uint32_t *ret_period,
                       bool *ret_timed);

/* The pid namespaces BPF recorded for a process, into p (n_pidns 0 when it could read none). */
void pidns_from_ident(const struct ts_ident *id, ProcessInfo *p);

/* A lifecycle event from the ring buffer, kept until the maps have been drained. */
typedef struct LifecycleEvent {
        uint32_t type; /* enum ts_event_type */
        uint32_t tgid;
        uint64_t start_time;
        uint64_t min_flt, maj_flt; /* exit: the final figures */
        struct ts_delays delays;   /* exit: the final delay accounting */
        uint32_t uid;              /* the real uid after the exec, at the exit */
        char comm[COMM_MAX];       /* the new name, the final name */
        char *cmdline;             /* exec: from the event's argument bytes, NULL when none */
        uint64_t cgroup_id;        /* exec: its cgroup (v2) then, 0 when unknown */
        char *unit;                /* exec: that cgroup's unit as BPF named it, NULL when none */
} LifecycleEvent;

/* Decodes one ring buffer record. -EBADMSG for one too short or of a type user space does not
 * know: it is skipped. An exec event's command line and unit are NULL when it has none (or no
 * memory). */
int lifecycle_event_decode(const void *data, size_t size, LifecycleEvent *ret);
void lifecycle_event_done(LifecycleEvent *e);

/* The kernel's encoding of a device number (major << 20 | minor, as in super_block->s_dev) as
 * stat() gives it (st_dev). */
uint64_t dev_from_kernel(uint32_t dev);
/* The path BPF recorded for a file (components innermost first) joined: "/usr/lib/libc.so.6";
 * "..." first when its outermost components did not fit. malloc'd; NULL when out of memory. */
char *file_name_join(const struct ts_file_name *n);
/* The other way: an absolute path into components innermost first, as BPF records them (each
 * cut to TS_NAME_LEN - 1 bytes; the outermost missing and truncated set past TS_PATH_DEPTH), for
 * a file user space found in /proc/PID/maps where BPF could not look. -EINVAL when not absolute. */
int file_name_split(const char *path, struct ts_file_name *ret);
/* The path as this process can open it. BPF walks a file's path up to the root of the whole
 * mount tree; a trapstatd whose root is below it (a chroot, a container) sees the same file at
 * a shorter path, the walked one without some leading components. Returns the longest suffix
 * of path, starting at a '/', that stat() finds to be the file (dev, as stat gives it, and
 * ino): a pointer into path, or path itself when none is (a file since removed, say). */
const char *file_path_visible(const char *path, uint64_t dev, uint64_t ino);

/* Shares of what the collector keeps for processes and that grows with a user's processes: the
 * names of the files their sites are in (collector-procs.c). One user other than root holds at
 * most a quarter of max, all of them together seven eighths; root the rest too. */
typedef struct NameShare {
        uint32_t uid;
        size_t bytes;
} NameShare;

typedef struct NameShares {
        NameShare *users; /* those holding any */
        size_t n_users, capacity;
        size_t total;
} NameShares;

/* Charges bytes to uid: -E2BIG when that would take uid or all users over their share (nothing
 * charged), -ENOMEM. */
int name_shares_charge(NameShares *s, uint32_t uid, size_t bytes, size_t max);
/* Gives back what name_shares_charge() charged to uid. */
void name_shares_release(NameShares *s, uint32_t uid, size_t bytes);
void name_shares_done(NameShares *s);
