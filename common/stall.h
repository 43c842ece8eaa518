/* SPDX-License-Identifier: MIT */
#pragma once

/* Why a process waited, as the kernel's own delay accounting says (task_struct.delays, kept while
 * kernel.task_delayacct is 1): the varlink type Stall (schema/io.trapstat.varlink) as a C struct,
 * sums and its JSON form. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum StallCause {
        STALL_SWAPIN,    /* reading a page back from swap */
        STALL_THRASHING, /* waiting for a page of the working set the kernel evicted and wants back */
        STALL_RECLAIM,   /* direct reclaim: freeing memory before an allocation could go on */
        STALL_COMPACT,   /* direct compaction: moving pages to make a large free block */
        STALL_BLKIO,     /* block I/O (read(2), a page cache miss, fsync) */
        _STALL_MAX
} StallCause;

/* The JSON names of the causes: "swapin", "thrashing", "reclaim", "compact", "blkio". */
extern const char *const stall_cause_names[_STALL_MAX];

typedef struct Stall {
        uint64_t ns[_STALL_MAX];    /* nanoseconds waited */
        uint64_t count[_STALL_MAX]; /* waits */
} Stall;

/* a += b, saturated. */
void stall_add(Stall *a, const Stall *b);
bool stall_is_zero(const Stall *s);
/* Waited on memory: swapin, thrashing, reclaim and compaction together, saturated (blkio is not
 * memory: it is a part of it only when the I/O is a page's). */
uint64_t stall_memory_ns(const Stall *s);

/* The JSON members of each cause in Stall: "<name>Ns" and "<name>Count" ("swapinNs",
 * "swapinCount", ...). Constant: the History writer names them 1440 times for a day. */
extern const char *const stall_ns_members[_STALL_MAX];
extern const char *const stall_count_members[_STALL_MAX];

/* {"swapinNs": .., "swapinCount": .., ... "blkioNs": .., "blkioCount": ..}; NULL on allocation
 * failure. */
json_t *stall_to_json(const Stall *s);
/* Strict: every member present, non-negative integers, no other member. -EBADMSG otherwise. */
int stall_from_json(json_t *j, Stall *ret);
