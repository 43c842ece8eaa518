/* SPDX-License-Identifier: MIT */
#include "loop-turn.h"

static uint64_t longest_usec, slow;

void loop_turn_end(const uint64_t *start_usec) {
        uint64_t took = now_usec(CLOCK_MONOTONIC) - *start_usec;

        if (took > longest_usec)
                longest_usec = took;
        if (took > LOOP_TURN_SLOW_USEC)
                slow++;
}

uint64_t loop_turn_longest_usec(void) {
        return longest_usec;
}

uint64_t loop_turn_slow(void) {
        return slow;
}
