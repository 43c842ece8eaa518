/* SPDX-License-Identifier: MIT */
#pragma once

/* Which tier answers which part of a time range. Pure logic, unit-tested on its own.
 *
 * The store keeps counts in three tiers: raw (10 s), minute, hour. A tier is complete for
 * [kept_from, rolled_until): retention deleted what is older, and what is newer has not been
 * rolled into it yet (the raw tier is rolled into nothing: its rolled_until is UINT64_MAX).
 * rolled_until may stand inside one of the tier's intervals (the roll-up goes one finer
 * interval at a time): that interval's row then holds only the finer rows before the mark,
 * which a segment ending at the mark reads, and the finer tier the rest.
 * Retention never deletes from a tier what the next coarser tier has not rolled up, so every
 * instant is in at least one tier. A query reads each instant from exactly one tier: the
 * coarsest allowed one for whole intervals inside the range, finer ones at the edges. */

#include <stddef.h>
#include <stdint.h>

enum { TIER_RAW, TIER_MINUTE, TIER_HOUR, _TIER_MAX };

/* The raw tier's interval, the bucket a tick's counts go into. */
#define TIER_RAW_WIDTH_USEC (10 * UINT64_C(1000000))

/* Width of each tier's intervals: 10 s, 1 min, 1 h. Each divides the next. */
extern const uint64_t tier_width_usec[_TIER_MAX];

/* The start of the tier's interval that holds t. */
uint64_t tier_floor(int tier, uint64_t t);

typedef struct TierState {
        uint64_t width_usec;   /* 10 s, 60 s, 3600 s */
        uint64_t kept_from;    /* oldest instant the tier still has */
        uint64_t rolled_until; /* everything before it has been rolled into this tier */
} TierState;

typedef struct TierSegment {
        int tier;
        uint64_t from, to; /* rows with from <= time_usec < to */
} TierSegment;

#define TIER_MAX_SEGMENTS 8

/* Plans [since, until) over the tiers whose index is set in allowed (bit 1 << tier; TIER_RAW
 * must be allowed). Writes at most TIER_MAX_SEGMENTS segments in time order; returns their
 * number. A coarse interval is used only where it lies wholly inside the range, unless the
 * finer tiers no longer have that edge: then the coarse interval is taken whole (the edge is
 * approximated to the coarse width, as old data only exists at that width). */
size_t tier_plan(const TierState tiers[_TIER_MAX], unsigned allowed, uint64_t since, uint64_t until,
                 TierSegment out[TIER_MAX_SEGMENTS]);

/* The tiers whose width divides resolution_usec, as a bit set for tier_plan(). */
unsigned tier_allowed_for_resolution(const TierState tiers[_TIER_MAX], uint64_t resolution_usec);

const char *tier_name(int tier); /* "raw", "minute", "hour" */

/* The step of a history without one asked for (History without resolutionSec, trapstat history
 * without --step), in seconds: fine enough to see the shape of the part of [since, until) the
 * process lived (first_seen to last_seen), coarse enough to be read from the tiers that still
 * hold it by default: 10 s up to 6 hours, 60 s up to 7 days, else 3600 s. */
uint64_t tier_default_resolution_sec(uint64_t first_seen, uint64_t last_seen, uint64_t since, uint64_t until);
