/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "loop-turn.h"

/* Two callbacks, so two sites: one keeps the loop busy asleep for userdata's microseconds of the
 * clock, the other on the CPU for that much of the thread's CPU time (on a busy machine a turn
 * only gets longer, never shorter). Apart, a sleep the machine stretched past the spin cannot
 * hide the spin's figures. */
static void on_sleep(evutil_socket_t fd, short what, void *userdata) {
        LOOP_TURN;
        struct timespec ts = usec_to_timespec(*(const uint64_t *) userdata);

        (void) fd;
        (void) what;
        while (nanosleep(&ts, &ts) < 0)
                ;
}

static void on_spin(evutil_socket_t fd, short what, void *userdata) {
        LOOP_TURN;
        uint64_t usec = *(const uint64_t *) userdata, start = now_usec(CLOCK_THREAD_CPUTIME_ID);

        (void) fd;
        (void) what;
        while (now_usec(CLOCK_THREAD_CPUTIME_ID) - start < usec)
                ;
}

static void run_turn(struct event_base *base, uint64_t usec, bool spin) {
        event_callback_fn cb = spin ? on_spin : on_sleep;

        assert_int_equal(event_base_once(base, -1, EV_TIMEOUT, cb, &usec, &(struct timeval) {}), 0);
        assert_int_equal(event_base_dispatch(base), 1); /* no events left */
}

static const LoopTurnSite *site(const char *where) {
        const LoopTurnSite *sites;
        size_t n = loop_turn_sites(&sites);

        for (size_t i = 0; i < n; i++)
                if (!strcmp(sites[i].where, where))
                        return sites + i;
        fail_msg("no site %s", where);
        return NULL;
}

static void test_longest_and_slow(void **state) {
        struct event_base *base = event_base_new();

        (void) state;
        assert_non_null(base);
        assert_int_equal(loop_turn_longest_usec(), 0);
        assert_int_equal(loop_turn_slow(), 0);

        run_turn(base, 1000, false);
        assert_true(loop_turn_longest_usec() >= 1000);
        /* Under 5 ms unless the machine held this thread that long. */
        uint64_t slow = loop_turn_slow();

        run_turn(base, 12000, false);
        assert_true(loop_turn_longest_usec() >= 12000);
        assert_int_equal(loop_turn_slow(), slow + 1);
        /* Asleep: the longest turn took the clock's time, not the CPU's. Its CPU time is at most
         * what the turn took beside its 12 ms asleep, however long a busy or emulated machine held
         * the thread (that time is in both), but for the two clocks' drift apart (see below). A
         * bound of its own (5 ms) failed under qemu's emulated arm64 on a loaded host. */
        assert_int_equal(site("on_sleep")->longest_usec, loop_turn_longest_usec());
        assert_true(site("on_sleep")->longest.cpu_usec + 12000 <= site("on_sleep")->longest_usec + 1000);
        assert_true(site("on_sleep")->longest.blocked >= 1);

        /* On the CPU for 20 ms: its CPU time is the turn's (the longest of all unless the machine
         * stretched the sleep past it). */
        run_turn(base, 20000, true);
        assert_int_equal(loop_turn_slow(), slow + 2);
        const LoopTurnSite *spin = site("on_spin");
        assert_int_equal(spin->turns, 1);
        assert_true(spin->longest_usec >= 20000);
        assert_int_equal(loop_turn_longest_usec(), MAX(spin->longest_usec, site("on_sleep")->longest_usec));
        assert_true(spin->longest.cpu_usec >= 20000);
        /* Not more than the turn took, but for the two clocks' drift apart: the thread's CPU
         * clock and the monotonic one are different clocks, and under qemu's emulated CPU the CPU
         * time once came out more than 100 us over the turn's 20 ms. */
        if (spin->longest.cpu_usec > spin->longest_usec + 100)
                fprintf(stderr, "the spin's CPU time %" PRIu64 " us, its turn %" PRIu64 " us\n", spin->longest.cpu_usec,
                        spin->longest_usec);
        assert_true(spin->longest.cpu_usec <= spin->longest_usec + spin->longest_usec / 10 + 1000);
        assert_int_equal(spin->longest.blocked, 0); /* never asleep; preempted maybe */
        event_base_free(base);
}

/* Callbacks of their own, each a name of its own. */
#define QUICK(n)                                                                                                       \
        static void on_quick_##n(evutil_socket_t fd, short what, void *userdata) {                                     \
                LOOP_TURN;                                                                                             \
                (void) fd, (void) what, (void) userdata;                                                               \
        }
QUICK(0) QUICK(1) QUICK(2) QUICK(3) QUICK(4) QUICK(5) QUICK(6) QUICK(7) QUICK(8) QUICK(9) QUICK(10) QUICK(11) QUICK(12)
QUICK(13) QUICK(14)

static void test_per_callback(void **state) {
        static void (*const quick[])(evutil_socket_t, short, void *) = {
                on_quick_0, on_quick_1, on_quick_2,  on_quick_3,  on_quick_4,  on_quick_5,  on_quick_6, on_quick_7,
                on_quick_8, on_quick_9, on_quick_10, on_quick_11, on_quick_12, on_quick_13,
        };
        uint64_t slow = loop_turn_slow(), longest = loop_turn_longest_usec();
        const LoopTurnSite *sites;

        (void) state;
        /* on_sleep ran twice above and on_spin once; every slow turn was counted at its site. */
        assert_int_equal(loop_turn_sites(&sites), 2);
        assert_string_equal(sites[0].where, "on_sleep");
        assert_int_equal(sites[0].turns, 2);
        assert_string_equal(sites[1].where, "on_spin");
        assert_int_equal(sites[1].turns, 1);
        assert_int_equal(sites[0].slow + sites[1].slow, slow);
        assert_int_equal(MAX(sites[0].longest_usec, sites[1].longest_usec), longest);

        /* Fourteen more: the sixteenth callback is the last told apart. */
        for (size_t i = 0; i < ELEMENTSOF(quick); i++) {
                quick[i](-1, 0, NULL);
                quick[i](-1, 0, NULL);
        }
        assert_int_equal(loop_turn_sites(&sites), LOOP_TURN_SITES);
        assert_string_equal(sites[2].where, "on_quick_0");
        assert_int_equal(sites[2].turns, 2);
        assert_string_equal(sites[LOOP_TURN_SITES - 1].where, "on_quick_13");
        assert_int_equal(sites[LOOP_TURN_SITES - 1].turns, 2);
        on_quick_14(-1, 0, NULL); /* one too many: not listed */
        assert_int_equal(loop_turn_sites(&sites), LOOP_TURN_SITES);
        assert_string_equal(sites[LOOP_TURN_SITES - 1].where, "on_quick_13");
        /* The first two sites' figures stay their own. A quick turn is slow only when the machine
         * held the thread (under qemu it did): every slow turn is counted once, at its site when it
         * has one. */
        assert_int_equal(sites[0].slow + sites[1].slow, slow);
        assert_int_equal(MAX(sites[0].longest_usec, sites[1].longest_usec), longest);
        uint64_t listed_slow = 0;
        for (size_t i = 0; i < LOOP_TURN_SITES; i++)
                listed_slow += sites[i].slow;
        assert_true(loop_turn_slow() >= listed_slow);
        assert_true(loop_turn_slow() <= listed_slow + 1); /* on_quick_14's turn, unlisted */
        assert_true(loop_turn_longest_usec() >= longest);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_longest_and_slow),
                cmocka_unit_test(test_per_callback),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
