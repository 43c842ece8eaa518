/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tier-util.h"

#define S UINT64_C(1000000)
#define M (60 * S)
#define H (3600 * S)
#define DAY (24 * H)

/* "Now" is day 100, 12:34:56; raw kept 24 h, minutes 14 d; rolled up to the last full minute
 * and hour. */
static const uint64_t now = 100 * DAY + 12 * H + 34 * M + 56 * S;

static void state(TierState t[_TIER_MAX]) {
        t[TIER_RAW] = (TierState) { 10 * S, now - DAY, UINT64_MAX };
        t[TIER_MINUTE] = (TierState) { M, now - 14 * DAY - 34 * M - 56 * S, now - 56 * S };
        t[TIER_HOUR] = (TierState) { H, 0, now - 34 * M - 56 * S };
}

/* Every instant of [since, until) is in exactly one segment, segments in order. */
static void assert_covers(const TierSegment *seg, size_t n, uint64_t since, uint64_t until) {
        uint64_t at = since;

        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
                assert_true(seg[i].from <= at); /* no gap (a coarse edge may reach back) */
                assert_true(seg[i].to > seg[i].from);
                at = seg[i].to;
        }
        assert_int_equal(at, until);
}

/* Each tier's width divides the next one's, so an interval of a coarser tier is whole intervals
 * of the finer ones; tier_floor() cuts a time down to its tier's interval. */
static void test_widths_and_floor(void **state_) {
        const uint64_t s = 1000000, t = 1700000000000000ULL + 3599 * s + 123;

        assert_int_equal(tier_width_usec[TIER_RAW], TIER_RAW_WIDTH_USEC);
        assert_int_equal(tier_width_usec[TIER_RAW], 10 * s);
        assert_int_equal(tier_width_usec[TIER_MINUTE], 60 * s);
        assert_int_equal(tier_width_usec[TIER_HOUR], 3600 * s);
        for (int i = 1; i < _TIER_MAX; i++)
                assert_int_equal(tier_width_usec[i] % tier_width_usec[i - 1], 0);
        for (int i = 0; i < _TIER_MAX; i++) {
                uint64_t f = tier_floor(i, t);

                assert_int_equal(f % tier_width_usec[i], 0);
                assert_true(f <= t && t - f < tier_width_usec[i]);
                assert_int_equal(tier_floor(i, f), f);
        }
        assert_int_equal(tier_floor(TIER_RAW, 0), 0);
        assert_int_equal(tier_floor(TIER_HOUR, UINT64_MAX), UINT64_MAX - UINT64_MAX % (3600 * s));
        (void) state_;
}

static void test_default_resolution(void **state_) {
        const uint64_t t0 = 1700000000000000ULL; /* H: an hour, defined above */

        (void) state_;
        /* The part of the window the process lived decides, not the window. */
        assert_int_equal(tier_default_resolution_sec(t0, t0 + 6 * H, 0, UINT64_MAX), 10);
        assert_int_equal(tier_default_resolution_sec(t0, t0 + 6 * H + 1, 0, UINT64_MAX), 60);
        assert_int_equal(tier_default_resolution_sec(t0, t0 + 7 * 24 * H, 0, UINT64_MAX), 60);
        assert_int_equal(tier_default_resolution_sec(t0, t0 + 7 * 24 * H + 1, 0, UINT64_MAX), 3600);
        /* A year-long life seen through a 2 h window. */
        assert_int_equal(tier_default_resolution_sec(t0, t0 + 8760 * H, t0 + 100 * H, t0 + 102 * H), 10);
        /* A window after the process's end, and an empty one. */
        assert_int_equal(tier_default_resolution_sec(t0, t0 + H, t0 + 10 * H, UINT64_MAX), 10);
        assert_int_equal(tier_default_resolution_sec(t0, t0 + 30 * 24 * H, t0 + 2 * H, t0 + 2 * H), 10);
}

static void test_short_window_is_raw(void **state_) {
        TierState t[_TIER_MAX];
        TierSegment seg[TIER_MAX_SEGMENTS];
        size_t n;

        state(t);
        n = tier_plan(t, 7, now - 60 * S, now, seg);
        assert_int_equal(n, 1);
        assert_int_equal(seg[0].tier, TIER_RAW);
        assert_covers(seg, n, now - 60 * S, now);
}

static void test_day_uses_hours_in_the_middle(void **state_) {
        TierState t[_TIER_MAX];
        TierSegment seg[TIER_MAX_SEGMENTS];
        size_t n;

        state(t);
        n = tier_plan(t, 7, now - DAY, now, seg);
        assert_covers(seg, n, now - DAY, now);
        /* left edge: raw then minutes up to the hour; 23 whole hours; minutes; raw. */
        assert_int_equal(n, 5);
        assert_int_equal(seg[0].tier, TIER_RAW);
        assert_int_equal(seg[1].tier, TIER_MINUTE);
        assert_int_equal(seg[2].tier, TIER_HOUR);
        assert_int_equal(seg[2].to - seg[2].from, 23 * H);
        assert_int_equal(seg[3].tier, TIER_MINUTE);
        assert_int_equal(seg[3].to, now - 56 * S);
        assert_int_equal(seg[4].tier, TIER_RAW);
}

static void test_old_edges_take_the_coarse_interval(void **state_) {
        TierState t[_TIER_MAX];
        TierSegment seg[TIER_MAX_SEGMENTS];
        size_t n;

        state(t);
        /* 30 days back: minutes are gone before 14 days, so the first hour is taken whole. */
        n = tier_plan(t, 7, now - 30 * DAY, now, seg);
        assert_int_equal(seg[0].tier, TIER_HOUR);
        assert_int_equal(seg[0].from, now - 30 * DAY - 34 * M - 56 * S);
        assert_int_equal(seg[n - 1].tier, TIER_RAW);
        assert_int_equal(seg[n - 1].to, now);
}

static void test_resolution_limits_tiers(void **state_) {
        TierState t[_TIER_MAX];
        TierSegment seg[TIER_MAX_SEGMENTS];
        size_t n;

        state(t);
        assert_int_equal(tier_allowed_for_resolution(t, 10 * S), 1);
        assert_int_equal(tier_allowed_for_resolution(t, 30 * S), 1);
        assert_int_equal(tier_allowed_for_resolution(t, 60 * S), 3);
        assert_int_equal(tier_allowed_for_resolution(t, 2 * H), 7);

        /* Minutes only: a day is minutes in the middle, raw at the right edge. */
        n = tier_plan(t, 3, now - 6 * H, now, seg);
        assert_covers(seg, n, now - 6 * H, now);
        for (size_t i = 0; i < n; i++)
                assert_true(seg[i].tier != TIER_HOUR);
}

static void test_nothing_rolled_yet(void **state_) {
        TierState t[_TIER_MAX] = {
                [TIER_RAW] = { 10 * S, 0, UINT64_MAX },
                [TIER_MINUTE] = { M, 0, 0 },
                [TIER_HOUR] = { H, 0, 0 },
        };
        TierSegment seg[TIER_MAX_SEGMENTS];
        size_t n = tier_plan(t, 7, 0, now, seg);

        assert_int_equal(n, 1);
        assert_int_equal(seg[0].tier, TIER_RAW);
        assert_int_equal(seg[0].from, 0);
        assert_int_equal(seg[0].to, now);
        assert_int_equal(tier_plan(t, 7, now, now, seg), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_widths_and_floor),
                cmocka_unit_test(test_default_resolution),
                cmocka_unit_test(test_short_window_is_raw),
                cmocka_unit_test(test_day_uses_hours_in_the_middle),
                cmocka_unit_test(test_old_edges_take_the_coarse_interval),
                cmocka_unit_test(test_resolution_limits_tiers),
                cmocka_unit_test(test_nothing_rolled_yet),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
