/* SPDX-License-Identifier: MIT */
#include "loop-turn.h"

#include <sys/resource.h>

static uint64_t longest_usec, slow;
static LoopTurnSite sites[LOOP_TURN_SITES];
static size_t n_sites;

/* Callbacks are told apart by their name's address: __func__ is one static string each. */
static LoopTurnSite *site_of(const char *where) {
        for (size_t i = 0; i < n_sites; i++)
                if (sites[i].where == where)
                        return sites + i;
        if (n_sites == LOOP_TURN_SITES)
                return NULL;
        sites[n_sites].where = where;
        return sites + n_sites++;
}

LoopTurnUsage loop_turn_usage(void) {
        struct rusage ru;

        /* The CPU time from the thread's clock: getrusage()'s leaves out what the thread ran
         * since the scheduler last accounted it (up to a tick). getrusage() cannot fail for
         * RUSAGE_THREAD with a valid pointer. */
        if (getrusage(RUSAGE_THREAD, &ru) < 0)
                return (LoopTurnUsage) {};
        return (LoopTurnUsage) { .cpu_usec = now_usec(CLOCK_THREAD_CPUTIME_ID),
                                 .blocked = (uint64_t) ru.ru_nvcsw,
                                 .preempted = (uint64_t) ru.ru_nivcsw };
}

void loop_turn_end(const LoopTurn *turn) {
        uint64_t took = now_usec(CLOCK_MONOTONIC) - turn->start_usec;
        LoopTurnSite *s = site_of(turn->where);

        if (took > longest_usec)
                longest_usec = took;
        if (took > LOOP_TURN_SLOW_USEC)
                slow++;
        if (!s)
                return;
        s->turns++;
        if (took > s->longest_usec) {
                LoopTurnUsage u = loop_turn_usage();

                s->longest_usec = took;
                s->longest = (LoopTurnUsage) { .cpu_usec = u.cpu_usec - turn->start.cpu_usec,
                                               .blocked = u.blocked - turn->start.blocked,
                                               .preempted = u.preempted - turn->start.preempted };
        }
        if (took > LOOP_TURN_SLOW_USEC)
                s->slow++;
}

uint64_t loop_turn_longest_usec(void) {
        return longest_usec;
}

uint64_t loop_turn_slow(void) {
        return slow;
}

size_t loop_turn_sites(const LoopTurnSite **ret) {
        *ret = sites;
        return n_sites;
}
