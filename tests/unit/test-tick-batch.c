/* SPDX-License-Identifier: MIT */
/* A tick on its way to the writer (daemon/tick-batch.c): a copy that outlives the collector's
 * samples, and newer ticks merged into it without losing or doubling a count. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "tick-batch.h"

static const Traps ud3 = { .vector[6] = 3 };

static const TickEntry *find(const TickBatch *b, uint32_t pid) {
        for (size_t i = 0; i < b->n_entries; i++)
                if (b->entries[i].process.pid == pid)
                        return &b->entries[i];
        return NULL;
}

static void test_copy_outlives_the_samples(void **state _unused_) {
        char cmdline[] = "app --flag", unit[] = "a.service", object[] = "/usr/bin/app";
        ProcessInfo a = { .pid = 20, .start_time = 7, .comm = "app", .cmdline = cmdline, .unit = unit };
        ProcessInfo b = { .pid = 10, .start_time = 9, .comm = "b" };
        SiteCount site = { .kind = SITE_TRAP, .vector = 6, .period = 1, .object = object, .offset = 0x40, .count = 3,
                           .version = { .ctime_nsec = 1700000000000000001, .generation = 5 } };
        ProcessSample s[] = {
                { &a, (Faults) { .user = 5, .minor = 5 }, &ud3, &site, 1 },
                { &b, (Faults) { .kernel = 2 } },
        };
        const ProcessSample *out;
        TickBatch *batch;
        size_t n;

        assert_int_equal(tick_batch_new(1, 1000, s, ELEMENTSOF(s), &site, 1, &batch), 0);
        /* The collector reuses its buffers at the next drain. */
        memset(cmdline, 'x', sizeof(cmdline) - 1);
        memset(object, 'y', sizeof(object) - 1);
        a.pid = 99;

        assert_int_equal(tick_batch_samples(batch, &out, &n), 0);
        assert_int_equal(n, 2);
        /* Sorted by (pid, start time). */
        assert_int_equal(out[0].process->pid, 10);
        assert_int_equal(out[0].delta.kernel, 2);
        assert_null(out[0].traps);
        assert_int_equal(out[1].process->pid, 20);
        assert_string_equal(out[1].process->cmdline, "app --flag");
        assert_string_equal(out[1].process->unit, "a.service");
        assert_int_equal(out[1].delta.user, 5);
        assert_int_equal(out[1].traps->vector[6], 3);
        assert_int_equal(out[1].n_sites, 1);
        assert_string_equal(out[1].sites[0].object, "/usr/bin/app");
        /* The file's version goes with it: the store keeps a site per version. */
        assert_true(out[1].sites[0].version.ctime_nsec == 1700000000000000001 && out[1].sites[0].version.generation == 5);
        assert_int_equal(batch->n_fills, 1);
        assert_string_equal(batch->fills[0].object, "/usr/bin/app");
        assert_int_equal(batch->fills[0].version.generation, 5);
        assert_int_equal(batch->merged, 0);
        tick_batch_free(batch);
}

static void test_merge_adds_up(void **state _unused_) {
        ProcessInfo a1 = { .pid = 20, .start_time = 7, .comm = "app", .cmdline = (char *) "old", .first_seen_usec = 100 };
        ProcessInfo a2 = { .pid = 20, .start_time = 7, .comm = "app2", .cmdline = (char *) "new",
                           .unit = (char *) "u.service", .first_seen_usec = 200, .exited = true };
        /* The same pid, another process (the pid was reused): its own entry. */
        ProcessInfo a3 = { .pid = 20, .start_time = 8, .comm = "reused" };
        ProcessInfo c = { .pid = 5, .start_time = 1, .comm = "c" };
        SiteCount x = { .kind = SITE_TRAP, .vector = 6, .period = 1, .object = (char *) "/x", .offset = 1, .count = 3 };
        SiteCount y = { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 256, .object = (char *) "/y",
                        .version = { .ctime_nsec = 77, .generation = 8 }, .offset = 2, .count = 1 };
        const TickEntry *e;
        TickBatch *batch;

        assert_int_equal(tick_batch_new(1, 1000, (ProcessSample[]) { { &a1, (Faults) { .user = 5 }, &ud3, &x, 1 } },
                                        1, NULL, 0, &batch),
                         0);
        assert_int_equal(tick_batch_merge(batch, 2, 2000,
                                          (ProcessSample[]) { { &a2, (Faults) { .user = 2, .write = 1 }, &ud3, &y, 1 },
                                                              { &c, (Faults) { .kernel = 4 } },
                                                              { &a3, (Faults) { .minor = 9 } } },
                                          3, &y, 1),
                         0);
        assert_int_equal(batch->seq, 2);
        assert_int_equal(batch->now_usec, 2000);
        assert_int_equal(batch->merged, 1);
        assert_int_equal(batch->n_entries, 3);

        e = &batch->entries[batch->order[1]]; /* by (pid, start_time): (5, 1), (20, 7), (20, 8) */
        assert_int_equal(e->process.start_time, 7);
        assert_int_equal(e->delta.user, 7);
        assert_int_equal(e->delta.write, 1);
        assert_int_equal(e->traps->vector[6], 6);
        assert_int_equal(e->n_sites, 2);
        assert_string_equal(e->sites[0].object, "/x");
        assert_string_equal(e->sites[1].object, "/y");
        assert_true(e->sites[1].version.ctime_nsec == 77 && e->sites[1].version.generation == 8);
        /* The newer tick's name, command line and unit; first seen and exit kept. */
        assert_string_equal(e->process.comm, "app2");
        assert_string_equal(e->process.cmdline, "new");
        assert_string_equal(e->process.unit, "u.service");
        assert_int_equal(e->process.first_seen_usec, 100);
        assert_true(e->process.exited);
        assert_int_equal(batch->entries[batch->order[2]].delta.minor, 9);
        assert_int_equal(find(batch, 5)->delta.kernel, 4);
        assert_null(find(batch, 5)->traps);
        assert_int_equal(batch->n_fills, 1);
        tick_batch_free(batch);
}

/* 200 ticks of random subsets of 500 processes merged into one: every sum as counted apart. */
static void test_merge_many(void **state _unused_) {
        enum { PROCESSES = 500, TICKS = 200 };
        static ProcessInfo infos[PROCESSES];
        static uint64_t expected[PROCESSES];
        static ProcessSample s[PROCESSES];
        const ProcessSample *out;
        TickBatch *batch = NULL;
        uint64_t total = 0, sum = 0;
        size_t n;

        srand(1);
        for (size_t i = 0; i < PROCESSES; i++)
                infos[i] = (ProcessInfo) { .pid = (uint32_t) (rand() % 100000), .start_time = i };
        for (uint64_t t = 1; t <= TICKS; t++) {
                size_t k = 0;

                for (size_t i = 0; i < PROCESSES; i++)
                        if (rand() % 3 == 0) {
                                uint64_t v = (uint64_t) (rand() % 1000) + 1;

                                s[k++] = (ProcessSample) { &infos[i], (Faults) { .user = v } };
                                expected[i] += v;
                                total += v;
                        }
                if (!batch)
                        assert_int_equal(tick_batch_new(t, t, s, k, NULL, 0, &batch), 0);
                else
                        assert_int_equal(tick_batch_merge(batch, t, t, s, k, NULL, 0), 0);
        }
        assert_int_equal(batch->merged, TICKS - 1);
        assert_int_equal(tick_batch_samples(batch, &out, &n), 0);
        for (size_t i = 0; i < n; i++) {
                /* Each process once. */
                if (i > 0)
                        assert_true(out[i - 1].process->pid < out[i].process->pid ||
                                    (out[i - 1].process->pid == out[i].process->pid &&
                                     out[i - 1].process->start_time < out[i].process->start_time));
                assert_int_equal(out[i].delta.user, expected[out[i].process->start_time]);
                sum += out[i].delta.user;
        }
        assert_int_equal(sum, total);
        tick_batch_free(batch);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_copy_outlives_the_samples),
                cmocka_unit_test(test_merge_adds_up),
                cmocka_unit_test(test_merge_many),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
