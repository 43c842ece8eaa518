/* SPDX-License-Identifier: MIT */
#pragma once

/* Where processes trap and fault: the varlink type Site (schema/io.trapstat.varlink) as C
 * structs, shared by the collector (which builds them each tick), the store (which keeps them in
 * the tiers) and the methods (which serve them).
 *
 * A site is one instruction: the file it is mapped from and its offset in that file (so it
 * means the same in every process and after the process died), or, for code that is in no file
 * (a JIT's), its address. Every trap has its site, exactly; page faults are sampled, one in
 * `period` of a process's faults on one CPU, and their counts are samples, never passed off as
 * exact. Every major fault taken in user mode has its site too, exactly: there the memory tells
 * what the fault waited for. Next to the instruction: what kind of memory the faulting address was
 * in (the page fault's address, or si_addr of the signal that has one). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum SiteKind {
        SITE_TRAP = 0,  /* a CPU exception the kernel turned into a signal: every one counted */
        SITE_FAULT = 1, /* a user page fault: sampled */
        SITE_MAJOR = 2, /* a major fault taken in user mode: every one counted, at its completion */
        _SITE_KIND_MAX,
} SiteKind;

/* "trap", "fault", "major" (the IDL's enum SiteKind). The numbers are stored in the database:
 * append only. */
const char *site_kind_name(SiteKind k);
/* -EINVAL for any other name. */
int site_kind_from_name(const char *name, SiteKind *ret);

/* What memory an address was in. The numbers are stored in the database: append only. */
typedef enum MemoryKind {
        MEMORY_NONE = 0,     /* no address: the signal carries none (SI_KERNEL) */
        MEMORY_FILE = 1,     /* a file mapping: memory_object names the file */
        MEMORY_ANON = 2,     /* anonymous memory (also a JIT's code) */
        MEMORY_HEAP = 3,     /* the brk heap */
        MEMORY_STACK = 4,    /* the main thread's stack */
        MEMORY_VDSO = 5,     /* the kernel's vDSO */
        MEMORY_UNMAPPED = 6, /* no mapping at all (a null pointer, say) */
        MEMORY_UNKNOWN = 7,  /* the mappings could not be read at that moment */
        _MEMORY_KIND_MAX,
} MemoryKind;

/* "none", "file", "anon", "heap", "stack", "vdso", "unmapped", "unknown". */
const char *memory_kind_name(MemoryKind k);
int memory_kind_from_name(const char *name, MemoryKind *ret);
/* The object name of memory that is no file: "[anon]", "[heap]", "[stack]", "[vdso]",
 * "[unmapped]", "[unknown]"; NULL for MEMORY_FILE and MEMORY_NONE. */
const char *memory_kind_object(MemoryKind k);

/* The slot of fault and major fault sites (they are #PF), stored as such on every architecture and
 * named SITE_FAULT_VECTOR_NAME in Site.vector. */
#define SITE_FAULT_VECTOR 14
#define SITE_FAULT_VECTOR_NAME "PF"

/* Which file a path and an inode number stood for when a site was named: what a rename, a change
 * of the file or a reuse of its inode number by another file changes. The store keeps a site per
 * version, so an inode number reused at the same path never gets the old file's symbol. Both 0:
 * not known (no file; a file the kernel could not name; a row stored before versions were kept). */
typedef struct ObjectVersion {
        uint64_t ctime_nsec; /* the inode's change time, ns since the epoch */
        uint32_t generation; /* the inode's generation (0 where the file system keeps none) */
} ObjectVersion;

typedef struct SiteCount {
        SiteKind kind;
        unsigned vector;       /* traps: the exception vector (TRAP_VECTOR_UNKNOWN when not known);
                                * faults and major faults: SITE_FAULT_VECTOR */
        uint32_t period;       /* faults: one in period was sampled; 1 for the others */
        /* The instruction. */
        char *object;          /* the file's path; for code in no file memory_kind_object() of its memory */
        uint64_t dev, ino;     /* the file's, as stat() gives them (st_dev, st_ino); 0 for no file */
        ObjectVersion version; /* the file's, when it was named: a site per version in the store */
        uint64_t offset;       /* in the file; the address for code in no file */
        char *symbol;          /* NULL when not known */
        uint64_t symbol_offset;
        /* The memory the faulting address was in. */
        MemoryKind memory;
        char *memory_object;   /* the file for MEMORY_FILE, else NULL */
        /* Its identity without a version: the store keeps it as version 0. It has no symbol that
         * a new file could inherit, and a data file written while mapped changes its change time
         * with every write: a version would make a dictionary row (and coarser-tier rows) per
         * write. */
        uint64_t memory_dev, memory_ino;
        uint64_t count;        /* traps, fault samples, or major faults */
        uint64_t time_ns;      /* fault samples and major faults: the time they took (0 for traps) */
} SiteCount;

/* Frees the strings; the struct itself is the caller's. */
void site_count_done(SiteCount *s);
void site_counts_free(SiteCount *a, size_t n);
/* Deep copy into *ret (its strings duplicated); -ENOMEM. */
int site_count_copy(const SiteCount *s, SiteCount *ret);
/* The estimated number of events: count × period. */
uint64_t site_count_estimated(const SiteCount *s);
/* The estimated time of all the site's faults: time_ns × period. */
uint64_t site_time_estimated(const SiteCount *s);

/* Whether sites of kind k are page faults' (fault and major): vector SITE_FAULT_VECTOR, a time. */
bool site_kind_is_fault(SiteKind k);

/* Site.vector: "PF" for a fault or major fault site, the trap's name (trap_vector_name()) for a trap's. buf
 * must hold 16 bytes. */
const char *site_vector_name(const SiteCount *s, char buf[static 16]);

/* The varlink Site object: every member of the IDL's type, vector named as Counters.traps names
 * it ("PF" for fault sites), estimated = site_count_estimated(), symbolOffset null with symbol,
 * memoryObject null unless memory is "file"; counts beyond 2^63 - 1 clamped to it. Paths and
 * symbols that are not UTF-8 carry U+FFFD (text_to_json()). NULL on allocation failure or for a
 * kind or memory out of range. */
json_t *site_count_to_json(const SiteCount *s);
/* Strict, for the client and the tests: an object with every member of the IDL's Site (symbol,
 * symbolOffset and memoryObject may be null or absent) and no other, each of its type and in its
 * range, and consistent: sampled exactly for faults, period 1 for traps, "PF" for faults,
 * symbolOffset with symbol, memoryObject only for "file", estimated = count × period (clamped as
 * above), major sites unsampled with period 1 and "PF". -EBADMSG otherwise, -ENOMEM. dev, ino and the versions, which the reply does not carry,
 * are 0.
 * Free *ret with site_count_done(). */
int site_count_from_json(json_t *j, SiteCount *ret);
