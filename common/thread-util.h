/* SPDX-License-Identifier: MIT */
#pragma once

/* The daemon's writer, checkpointer and symbol worker do background work that the event loop
 * hands them. (The query workers answer clients, whose wait is latency too: they stay normal.) */

/* Makes the calling thread such a background thread:
 * - SCHED_BATCH: the fair scheduler never lets a batch thread preempt the thread that woke it.
 *   A wakeup of a normal thread may take the waker's CPU for a slice (several ms on a busy
 *   machine), and the waker is the loop, handing over a tick or symbol requests;
 * - nice > 0: a lower weight as well (on Linux a thread's nice value is its own);
 * - its name (at most 15 bytes), which ps, top and profiles show.
 * The name is set in any case. Returns 0, or the negative errno of the first setting the system
 * refused (a seccomp filter can refuse both scheduling calls). */
int thread_make_background(const char *name, int nice);
