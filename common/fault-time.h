/* SPDX-License-Identifier: MIT */
#pragma once

/* How long processes waited on page faults: the varlink type FaultTime
 * (schema/io.trapstat.varlink) as a C struct, its JSON form, and what a histogram of it says
 * (how many faults, which bucket holds a quantile). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Buckets of the histogram: 0 holds faults under 1 us, i (1..FAULT_TIME_BUCKETS - 2) those from
 * 2^(i-1) us to under 2^i us, the last those from 2^(FAULT_TIME_BUCKETS - 2) us (about 4.2 s) up.
 * The kernel's side is TS_FAULT_BUCKETS in bpf/trapstat.h. */
#define FAULT_TIME_BUCKETS 24

typedef struct FaultTime {
        uint64_t minor_ns;  /* user-mode faults the kernel accounted as minor: time spent */
        uint64_t major_ns;  /* user-mode major faults */
        uint64_t kernel_ns; /* faults taken in kernel mode (copy_from_user and friends) */
        uint64_t max_ns;    /* the longest single fault in the interval */
        uint64_t histogram[FAULT_TIME_BUCKETS]; /* timed faults by duration */
        /* The timed major faults (user or kernel mode) by cause, as Faults counts them: a part of
         * major_ns + kernel_ns. */
        uint64_t major_file_ns;
        uint64_t major_anon_ns;
        uint64_t major_shmem_ns;
} FaultTime;

/* Adds b to a: sums and histogram added, the maximum the larger. Exact, so intervals merge in any
 * order. */
void fault_time_add(FaultTime *a, const FaultTime *b);
bool fault_time_is_zero(const FaultTime *f);
/* The faults timed: the histogram's sum. */
uint64_t fault_time_count(const FaultTime *f);
/* minor_ns + major_ns + kernel_ns, saturated. */
uint64_t fault_time_total_ns(const FaultTime *f);

/* A bucket's range in nanoseconds: [low, high); high is UINT64_MAX for the last. */
uint64_t fault_time_bucket_low_ns(unsigned bucket);
uint64_t fault_time_bucket_high_ns(unsigned bucket);
/* The bucket a fault of ns nanoseconds falls into (as BPF files it). */
unsigned fault_time_bucket_of(uint64_t ns);
/* The bucket holding the q-quantile (0 < q <= 1) of the timed faults: the first whose
 * cumulative count reaches ceil(q * count). -ENOENT when no fault was timed. */
int fault_time_quantile_bucket(const FaultTime *f, double q);

/* {"minorNs": ..., "majorNs": ..., "kernelNs": ..., "maxNs": ..., "histogram": [24 ints],
 * "majorNsByCause": {"file": ..., "anon": ..., "shmem": ...}}; NULL on allocation failure. */
json_t *fault_time_to_json(const FaultTime *f);
/* Strict: every member present (but majorNsByCause, which an older daemon does not send: zero),
 * non-negative integers, exactly FAULT_TIME_BUCKETS buckets, no unknown member. -EBADMSG
 * otherwise. */
int fault_time_from_json(json_t *j, FaultTime *ret);
