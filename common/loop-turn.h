/* SPDX-License-Identifier: MIT */
#pragma once

/* How long the event loop spends in one callback. A call that arrives meanwhile waits that long
 * before the loop reads it, so the longest turn is the most any call waited for the loop. The
 * callbacks that do the loop's work begin with LOOP_TURN, which also names them (their function),
 * so that a long turn says where it was; only the thread that runs the loop calls these. */

#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "time-util.h"

/* Turns longer than this are counted apart: the most a call should wait for the loop. */
#define LOOP_TURN_SLOW_USEC (5 * USEC_PER_MSEC)
/* Callbacks told apart (the daemon has 12); the turns of any past them count in the totals only. */
#define LOOP_TURN_SITES 16

/* The thread's CPU time (its CPU clock) and context switches (getrusage(RUSAGE_THREAD)) so far. */
typedef struct LoopTurnUsage {
        uint64_t cpu_usec;
        uint64_t blocked; /* voluntary switches: it slept, in a system call */
        uint64_t preempted; /* involuntary switches: another task took its CPU */
} LoopTurnUsage;

typedef struct LoopTurn {
        uint64_t start_usec;
        LoopTurnUsage start;
        const char *where; /* a static string: the callback's name */
} LoopTurn;

/* What the turns of one callback took since the process started. The longest's CPU time and
 * switches tell work from waiting: a turn that took 40 ms of the clock and 2 ms of CPU waited,
 * for a CPU (preempted) or in a system call (blocked). */
typedef struct LoopTurnSite {
        const char *where;
        uint64_t turns, slow, longest_usec;
        LoopTurnUsage longest; /* in the longest turn */
} LoopTurnSite;

LoopTurnUsage loop_turn_usage(void);

void loop_turn_end(const LoopTurn *turn);

#define LOOP_TURN                                                                                                      \
        _cleanup_(loop_turn_end) const LoopTurn loop_turn_ = { .start_usec = now_usec(CLOCK_MONOTONIC),              \
                                                               .start = loop_turn_usage(), .where = __func__ }

/* The longest turn since the process started, microseconds; how many took longer than
 * LOOP_TURN_SLOW_USEC. */
uint64_t loop_turn_longest_usec(void);
uint64_t loop_turn_slow(void);
/* The callbacks that have run, in the order they first did; their number. */
size_t loop_turn_sites(const LoopTurnSite **ret);
