/* SPDX-License-Identifier: MIT */
#pragma once

/* How long the event loop spends in one callback. A call that arrives meanwhile waits that long
 * before the loop reads it, so the longest turn is the most any call waited for the loop. The
 * callbacks that do the loop's work begin with LOOP_TURN; only the thread that runs the loop
 * calls these. */

#include <stdint.h>

#include "macro.h"
#include "time-util.h"

/* Turns longer than this are counted apart: the most a call should wait for the loop. */
#define LOOP_TURN_SLOW_USEC (5 * USEC_PER_MSEC)

void loop_turn_end(const uint64_t *start_usec);

#define LOOP_TURN _cleanup_(loop_turn_end) const uint64_t loop_turn_start_ = now_usec(CLOCK_MONOTONIC)

/* The longest turn since the process started, microseconds; how many took longer than
 * LOOP_TURN_SLOW_USEC. */
uint64_t loop_turn_longest_usec(void);
uint64_t loop_turn_slow(void);
