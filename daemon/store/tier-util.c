/* SPDX-License-Identifier: MIT */
#include "tier-util.h"

const uint64_t tier_width_usec[_TIER_MAX] = { TIER_RAW_WIDTH_USEC, 60 * UINT64_C(1000000), 3600 * UINT64_C(1000000) };

static uint64_t floor_to(uint64_t t, uint64_t w) {
        return t - t % w;
}

uint64_t tier_floor(int tier, uint64_t t) {
        return floor_to(t, tier_width_usec[tier]);
}

static uint64_t ceil_to(uint64_t t, uint64_t w) {
        uint64_t f = floor_to(t, w);
        return f == t || f > UINT64_MAX - w ? f : f + w;
}

static uint64_t min_u64(uint64_t a, uint64_t b) {
        return a < b ? a : b;
}

static void emit(TierSegment *out, size_t *n, int tier, uint64_t from, uint64_t to) {
        if (from >= to || *n >= TIER_MAX_SEGMENTS)
                return;
        /* Adjacent pieces of one tier become one segment. */
        if (*n > 0 && out[*n - 1].tier == tier && out[*n - 1].to == from) {
                out[*n - 1].to = to;
                return;
        }
        out[(*n)++] = (TierSegment) { .tier = tier, .from = from, .to = to };
}

/* The next finer allowed tier below `tier`; TIER_RAW is always allowed. */
static int finer(unsigned allowed, int tier) {
        for (int t = tier - 1; t > TIER_RAW; t--)
                if (allowed & (1U << t))
                        return t;
        return TIER_RAW;
}

static void plan(const TierState *tiers, unsigned allowed, int tier, uint64_t lo, uint64_t hi, TierSegment *out,
                 size_t *n) {
        const TierState *s = &tiers[tier];
        uint64_t a, b;
        int f;

        if (lo >= hi)
                return;
        if (tier == TIER_RAW) {
                emit(out, n, TIER_RAW, lo, hi);
                return;
        }
        f = finer(allowed, tier);

        /* The whole intervals of this tier inside [lo, hi) that it has rolled up. */
        a = ceil_to(lo, s->width_usec);
        b = min_u64(floor_to(hi, s->width_usec), s->rolled_until);
        /* The left edge predates what the finer tier keeps: only this tier has it. */
        if (a > lo && lo < tiers[f].kept_from && floor_to(lo, s->width_usec) < s->rolled_until)
                a = floor_to(lo, s->width_usec);
        if (a >= b) {
                plan(tiers, allowed, f, lo, hi, out, n);
                return;
        }
        plan(tiers, allowed, f, lo, a, out, n);
        emit(out, n, tier, a, b);
        plan(tiers, allowed, f, b, hi, out, n);
}

size_t tier_plan(const TierState tiers[_TIER_MAX], unsigned allowed, uint64_t since, uint64_t until,
                 TierSegment out[TIER_MAX_SEGMENTS]) {
        int coarsest = TIER_RAW;
        size_t n = 0;

        for (int t = _TIER_MAX - 1; t > TIER_RAW; t--)
                if (allowed & (1U << t)) {
                        coarsest = t;
                        break;
                }
        plan(tiers, allowed, coarsest, since, until, out, &n);
        return n;
}

unsigned tier_allowed_for_resolution(const TierState tiers[_TIER_MAX], uint64_t resolution_usec) {
        unsigned allowed = 1U << TIER_RAW;

        for (int t = TIER_MINUTE; t < _TIER_MAX; t++)
                if (resolution_usec % tiers[t].width_usec == 0)
                        allowed |= 1U << t;
        return allowed;
}

const char *tier_name(int tier) {
        static const char *const names[_TIER_MAX] = { "raw", "minute", "hour" };
        return tier >= 0 && tier < _TIER_MAX ? names[tier] : "?";
}

uint64_t tier_default_resolution_sec(uint64_t first_seen, uint64_t last_seen, uint64_t since, uint64_t until) {
        const uint64_t hour = 3600 * UINT64_C(1000000);
        uint64_t from = since > first_seen ? since : first_seen;
        uint64_t to = last_seen > from ? last_seen : from;

        if (until < to)
                to = until < from ? from : until;
        if (to - from <= 6 * hour)
                return 10;
        if (to - from <= 7 * 24 * hour)
                return 60;
        return 3600;
}
