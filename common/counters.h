/* SPDX-License-Identifier: MIT */
#pragma once

/* The data model shared by daemon, client and tests: the varlink types Faults and Process
 * (schema/io.trapstat.varlink) as C structs, and their JSON form. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container-util.h"
#include "fault-time.h"
#include "stall.h"

/* Parts of Faults the daemon may not count (then null in replies, never a false zero): bits of
 * FaultsKnown (what the daemon counts: collector_faults_known()) and of Faults.unknown (what a
 * reply said was not counted, for one interval or a sum over several). */
typedef enum FaultsKnown {
        FAULTS_KNOWN_ACCESS = 1U << 0,      /* read / write / exec / protection */
        FAULTS_KNOWN_MAJOR_CAUSE = 1U << 1, /* major_file / major_anon / major_shmem */
        /* Not a part of Faults: Counters.stall, the kernel's delay accounting, which it keeps only
         * while kernel.task_delayacct is 1. The same flags carry it through every JSON writer. */
        FAULTS_KNOWN_STALL = 1U << 2,
        FAULTS_KNOWN_ALL = FAULTS_KNOWN_ACCESS | FAULTS_KNOWN_MAJOR_CAUSE | FAULTS_KNOWN_STALL,
} FaultsKnown;

typedef struct Faults {
        uint64_t user;       /* page faults taken in user mode */
        uint64_t kernel;     /* page faults taken in kernel mode for the process */
        uint64_t minor;      /* the kernel's min_flt accounting */
        uint64_t major;      /* the kernel's maj_flt accounting */
        uint64_t read;       /* user faults by access ... */
        uint64_t write;
        uint64_t exec;
        uint64_t protection; /* ... and by cause: protection violation (else not-present) */
        /* Major faults by what the faulting address mapped, told at their completion: a file,
         * anonymous memory (swap-in) or shared memory (tmpfs, memfd, SysV shm, shared anonymous). */
        uint64_t major_file;
        uint64_t major_anon;
        uint64_t major_shmem;
        /* FaultsKnown bits of the members not known (null in the reply): not a counter, and not
         * in fault_fields. Sums of faults of which any is unknown are unknown. */
        unsigned unknown;
} Faults;

/* One row per Faults member, in IDL order, so every layer iterates one table instead of naming
 * fields. */
typedef struct FaultField {
        const char *name;   /* unique: the SortKey ("user", "majorFile") */
        const char *group;  /* the member of Faults it is in ("majorByCause"), NULL for Faults itself */
        const char *member; /* its JSON name in Faults or in group ("user", "file") */
        const char *column; /* the SQL column's suffix (f_<column>) */
        const char *csv;    /* the CSV header: name, or group.member */
        size_t offset;
        FaultsKnown part; /* the part it belongs to when that may be unknown; 0: always known */
} FaultField;

extern const FaultField fault_fields[]; /* at most 64 */
extern const size_t n_fault_fields;

static inline uint64_t *faults_field(Faults *f, const FaultField *field) {
        return (uint64_t *) ((char *) f + field->offset);
}
static inline uint64_t faults_get(const Faults *f, const FaultField *field) {
        return *(const uint64_t *) ((const char *) f + field->offset);
}
const FaultField *fault_field_by_name(const char *name);
/* Whether fault_fields[i] opens (closes) a group: its first (last) member. The JSON writers
 * (faults_to_json(), counters_format_json()) open and close the group's object there. */
static inline bool fault_field_opens_group(size_t i) {
        return fault_fields[i].group && (i == 0 || fault_fields[i - 1].group != fault_fields[i].group);
}
static inline bool fault_field_closes_group(size_t i) {
        return fault_fields[i].group && (i + 1 == n_fault_fields || fault_fields[i + 1].group != fault_fields[i].group);
}
/* Whether f's field is known (a number in replies): always, or when the daemon counts its part
 * (known) and f does not say it was not counted. */
static inline bool faults_field_known(const Faults *f, const FaultField *field, FaultsKnown known) {
        return !field->part || ((known & field->part) && !(f->unknown & field->part));
}

/* What rows are sorted by (IDL: sortBy of Top and Watch, trapstat top --sort): a Faults member,
 * "traps", all traps together, "faultTime", all time spent in faults, or "stall", all time waited
 * on memory. The one place that tells them apart. */
typedef enum SortWhat {
        SORT_FAULTS,     /* the Faults member field */
        SORT_TRAPS,
        SORT_FAULT_TIME, /* fault_time_total_ns() */
        SORT_STALL,      /* stall_memory_ns() */
} SortWhat;

typedef struct SortKey {
        const char *name;        /* static storage: outlives the text it was parsed from */
        SortWhat what;
        const FaultField *field; /* SORT_FAULTS only */
} SortKey;

#define SORT_KEY_TRAPS_NAME "traps"
#define SORT_KEY_FAULT_TIME_NAME "faultTime"
#define SORT_KEY_STALL_NAME "stall"

/* 0 and *ret for a known name; -EINVAL for any other. */
int sort_key_from_name(const char *name, SortKey *ret);

void faults_add(Faults *a, const Faults *b);
bool faults_is_zero(const Faults *f);
/* The members of a part null when the daemon does not count it (known, as
 * collector_faults_known() says) or f says it was not counted: the four access members where the
 * fault events do not carry the access kind (arm64; the perf software events instead of x86's
 * exception events), majorByCause (null as a whole) where the kernel cannot look up a fault's
 * mapping. Never a false zero. */
json_t *faults_to_json(const Faults *f, FaultsKnown known);
/* Strict: every member a non-negative integer, present unless its part may be unknown (the four
 * access members, majorByCause: null or missing sets the part in unknown, as from a daemon that
 * does not count it); no unknown members. -EBADMSG otherwise. */
int faults_from_json(json_t *j, Faults *ret);

/* Text a process or the file system chose (comm, command line, unit, file paths, symbols) as a
 * JSON string. It is bytes, and JSON strings are UTF-8: what is not (an argument in another
 * encoding, a name the kernel cut inside a character) becomes U+FFFD rather than the process or
 * the site vanishing from the reply. s NULL gives JSON null; NULL only on ENOMEM. */
json_t *text_to_json(const char *s);

#define COMM_MAX 16

/* A process's pid in one pid namespace: the namespace's inode number (as /proc/PID/ns/pid shows
 * it) and the pid there. */
typedef struct PidNsPid {
        uint32_t ns;
        uint32_t pid;
} PidNsPid;
#define PIDNS_LEVELS 4

typedef struct ProcessInfo {
        uint32_t pid;
        uint64_t start_time; /* ns since boot, as the kernel records it */
        char comm[COMM_MAX];
        char *cmdline;       /* NULL when unknown */
        uint32_t uid;
        char *unit;          /* systemd unit, NULL when unknown */
        uint64_t first_seen_usec;
        uint64_t last_seen_usec;
        bool exited;
        /* Its pid namespaces, outermost (the initial one) first, up to the innermost, which is
         * always the last: levels 0 .. PIDNS_LEVELS - 2, then the innermost (pidns_level), so a
         * deeper process has levels in between that are not known. n_pidns 0: none known. */
        uint32_t pidns_level;
        uint32_t n_pidns;
        PidNsPid pidns[PIDNS_LEVELS];
        Container *container; /* as its cgroup names it; NULL when in none or not known */
} ProcessInfo;

void process_info_done(ProcessInfo *p);
/* Orders processes by who they are, (pid, start time): for qsort() and tsearch() comparators. */
int process_identity_compare(uint32_t pid_a, uint64_t start_a, uint32_t pid_b, uint64_t start_b);
/* Deep copy into *ret. */
int process_info_copy(const ProcessInfo *p, ProcessInfo *ret);
json_t *process_info_to_json(const ProcessInfo *p);
/* IDL type Container; null for NULL. */
json_t *container_to_json(const Container *c);
/* The innermost pid namespace of p and its pid there: NULL when not known. */
const PidNsPid *process_info_ns(const ProcessInfo *p);
/* Whether p is in pid namespace ns (an inode number), and its pid there. */
bool process_info_pid_in(const ProcessInfo *p, uint32_t ns, uint32_t *ret_pid);
/* process_info_to_json() with another pid than p's: its pid as a caller in a pid namespace knows it. */
json_t *process_info_to_json_as(const ProcessInfo *p, uint32_t pid);

/* One process's counts over one tick: what the collector hands to the store. */
typedef struct ProcessSample {
        const ProcessInfo *process;
        Faults delta;
        const struct Traps *traps; /* NULL when the process trapped not at all this tick */
        /* Where it trapped and (sampled) faulted this tick: each site's count of the tick (common/sites.h). */
        const struct SiteCount *sites;
        size_t n_sites;
        FaultTime fault_time; /* how long its faults took this tick */
        Stall stall;          /* what the kernel's delay accounting grew by this tick (zero when it keeps none) */
} ProcessSample;
