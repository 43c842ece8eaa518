/* SPDX-License-Identifier: MIT */
#include "loop-turn.h"

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
                s->longest_usec = took;
                s->longest_cpu_usec = now_usec(CLOCK_THREAD_CPUTIME_ID) - turn->start_cpu_usec;
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
