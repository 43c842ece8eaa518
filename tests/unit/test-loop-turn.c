/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <time.h>

#include "loop-turn.h"

/* A callback that keeps the loop busy for *userdata microseconds (sleeping: on a busy machine
 * the turn only gets longer, never shorter). */
static void on_busy(evutil_socket_t fd, short what, void *userdata) {
        LOOP_TURN;
        uint64_t usec = *(const uint64_t *) userdata;
        struct timespec ts = usec_to_timespec(usec);

        (void) fd;
        (void) what;
        while (nanosleep(&ts, &ts) < 0)
                ;
}

static void run_turn(struct event_base *base, uint64_t usec) {
        assert_int_equal(event_base_once(base, -1, EV_TIMEOUT, on_busy, &usec, &(struct timeval) {}), 0);
        assert_int_equal(event_base_dispatch(base), 1); /* no events left */
}

static void test_longest_and_slow(void **state) {
        struct event_base *base = event_base_new();

        (void) state;
        assert_non_null(base);
        assert_int_equal(loop_turn_longest_usec(), 0);
        assert_int_equal(loop_turn_slow(), 0);

        run_turn(base, 1000);
        assert_true(loop_turn_longest_usec() >= 1000);
        /* Under 5 ms unless the machine held this thread that long. */
        uint64_t slow = loop_turn_slow();

        run_turn(base, 12000);
        assert_true(loop_turn_longest_usec() >= 12000);
        assert_int_equal(loop_turn_slow(), slow + 1);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_longest_and_slow),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
