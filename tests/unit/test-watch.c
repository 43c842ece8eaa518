/* SPDX-License-Identifier: MIT */
/* A Watch reply from a tick's samples (watch_reply_build): what the caller may see, the filters
 * (Watch's pid, pids, uid, unit and comm globs), the rows, the total and the exited list. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "traps.h"
#include "watch.h"

static const Traps ud = { .vector[6] = 3 };

/* 10 and 20 count; 30 and 5 exited without a count this tick, 40 exited with one. */
static const ProcessInfo procs[] = {
        { .pid = 10, .start_time = 100, .comm = "alpha", .uid = 0, .unit = (char *) "a.service" },
        { .pid = 20, .start_time = 200, .comm = "beta", .uid = 1000, .unit = (char *) "b.service" },
        { .pid = 30, .start_time = 300, .comm = "alpha2", .uid = 1000, .unit = (char *) "a.service", .exited = true },
        { .pid = 40, .start_time = 400, .comm = "gamma", .uid = 0, .exited = true },
        { .pid = 5, .start_time = 2, .comm = "alpha", .uid = 0, .unit = (char *) "a.service", .exited = true },
};

static ProcessSample samples[ELEMENTSOF(procs)];

static int setup(void **state) {
        samples[0] = (ProcessSample) { &procs[0], (Faults) { .user = 5 } };
        samples[1] = (ProcessSample) { &procs[1], (Faults) { .user = 7 }, &ud };
        samples[2] = (ProcessSample) { &procs[2] };
        samples[3] = (ProcessSample) { &procs[3], (Faults) { .user = 1 } };
        samples[4] = (ProcessSample) { &procs[4] };
        return 0;
}

/* The reply for filter; checks its rows' pids in order (the sort is by user faults), its exited
 * list's (pid, startTime) in pid order, processes, the total and the members every reply has. */
static void check(const WatchFilter *filter, const uint32_t *rows, size_t n_rows, const uint32_t *exited,
                  size_t n_exited) {
        _cleanup_json_ json_t *reply = watch_reply_build(samples, ELEMENTSOF(samples), filter, 1700000000000000,
                                                         1000000, 2, FAULTS_KNOWN_ALL);
        json_t *list, *e;
        uint64_t user = 0;
        size_t i;

        assert_non_null(reply);
        assert_int_equal(json_integer_value(json_object_get(reply, "timeUsec")), 1700000000000000);
        assert_int_equal(json_integer_value(json_object_get(reply, "intervalUsec")), 1000000);
        assert_int_equal(json_integer_value(json_object_get(reply, "missedTicks")), 2);
        list = json_object_get(reply, "rows");
        assert_int_equal(json_array_size(list), MIN(n_rows, filter->limit));
        json_array_foreach (list, i, e) {
                json_t *p = json_object_get(e, "process");

                assert_int_equal(json_integer_value(json_object_get(p, "pid")), rows[i]);
        }
        /* processes and the total count every row let through, also those past the limit. */
        assert_int_equal(json_integer_value(json_object_get(reply, "processes")), n_rows);
        for (size_t k = 0; k < n_rows; k++)
                for (size_t j = 0; j < ELEMENTSOF(procs); j++)
                        if (procs[j].pid == rows[k])
                                user += samples[j].delta.user;
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(reply, "total"), "faults"),
                                                            "user")),
                         user);

        list = json_object_get(reply, "exited");
        assert_true(json_is_array(list));
        assert_int_equal(json_array_size(list), n_exited);
        json_array_foreach (list, i, e) {
                assert_int_equal(json_object_size(e), 2);
                assert_int_equal(json_integer_value(json_object_get(e, "pid")), exited[i]);
                for (size_t j = 0; j < ELEMENTSOF(procs); j++)
                        if (procs[j].pid == exited[i])
                                assert_int_equal(json_integer_value(json_object_get(e, "startTime")),
                                                 procs[j].start_time);
        }
}

#define PIDS(...) (const uint32_t[]) { 0, __VA_ARGS__ } + 1, ELEMENTSOF(((const uint32_t[]) { 0, __VA_ARGS__ })) - 1
#define NONE NULL, 0

static WatchFilter watch_filter(int64_t uid) {
        WatchFilter f = { .limit = 20, .uid = uid, .process = PROCESS_FILTER_NONE };

        assert_int_equal(sort_key_from_name("user", &f.sort), 0);
        return f;
}

static void test_visibility(void **state) {
        WatchFilter f = watch_filter(-1);

        check(&f, PIDS(20, 10, 40), PIDS(5, 30, 40));
        /* Past the limit: fewer rows, the same processes, total and exited. */
        f.limit = 1;
        check(&f, PIDS(20, 10, 40), PIDS(5, 30, 40));
        /* A caller who sees only their own. */
        f = watch_filter(1000);
        check(&f, PIDS(20), PIDS(30));
        f = watch_filter(4242);
        check(&f, NONE, NONE);
}

/* Sorted by a major fault cause, with the causes counted; and where the daemon does not count
 * them, every row's and the total's majorByCause null, the rest as before. */
static void test_major_cause(void **state) {
        ProcessSample s[] = {
                { &procs[0], (Faults) { .user = 5, .major = 3, .major_anon = 1, .major_file = 2 } },
                { &procs[3], (Faults) { .user = 1, .major = 4, .major_anon = 4 } },
        };
        WatchFilter f = watch_filter(-1);
        _cleanup_json_ json_t *known = NULL, *unknown = NULL;
        json_t *rows, *row;
        size_t i;

        assert_int_equal(sort_key_from_name("majorAnon", &f.sort), 0);
        known = watch_reply_build(s, ELEMENTSOF(s), &f, 1, 1, 0, FAULTS_KNOWN_ALL);
        rows = json_object_get(known, "rows");
        assert_int_equal(json_array_size(rows), 2);
        /* procs[3]'s four swap-ins first. */
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(rows, 0), "process"), "pid")),
                         procs[3].pid);
        assert_int_equal(json_integer_value(json_object_get(
                                 json_object_get(json_object_get(json_object_get(known, "total"), "faults"), "majorByCause"),
                                 "anon")),
                         5);

        unknown = watch_reply_build(s, ELEMENTSOF(s), &f, 1, 1, 0, FAULTS_KNOWN_ACCESS);
        rows = json_object_get(unknown, "rows");
        assert_int_equal(json_array_size(rows), 2);
        json_array_foreach (rows, i, row) {
                json_t *faults = json_object_get(json_object_get(row, "counters"), "faults");

                assert_true(json_is_null(json_object_get(faults, "majorByCause")));
                assert_true(json_is_integer(json_object_get(faults, "read")));
        }
        assert_true(json_is_null(
                json_object_get(json_object_get(json_object_get(unknown, "total"), "faults"), "majorByCause")));
        (void) state;
}

/* A caller in a pid namespace: its processes only (also those of a namespace below it), by their
 * pids there, in the rows, the pid filters and the exited list. */
static void test_namespace(void **state) {
        const uint32_t host = 4026531836U, box = 4026532175U, inner = 4026532300U;
        const ProcessInfo ps[] = {
                { .pid = 5000, .start_time = 1, .comm = "app", .n_pidns = 2, .pidns = { { host, 5000 }, { box, 7 } } },
                { .pid = 5001, .start_time = 2, .comm = "deep", .n_pidns = 3, .pidns = { { host, 5001 }, { box, 8 },
                                                                                         { inner, 1 } },
                  .exited = true },
                { .pid = 7, .start_time = 3, .comm = "hostd", .n_pidns = 1, .pidns = { { host, 7 } } },
                { .pid = 6000, .start_time = 4, .comm = "unknown" },
        };
        const ProcessSample ss[] = {
                { &ps[0], (Faults) { .user = 3 } },
                { &ps[1], (Faults) { .user = 2 } },
                { &ps[2], (Faults) { .user = 9 } },
                { &ps[3], (Faults) { .user = 1 } },
        };
        WatchFilter f = watch_filter(-1);
        _cleanup_json_ json_t *all = NULL, *in_box = NULL, *by_pid = NULL;
        json_t *rows;

        f.process.pidns = box;
        in_box = watch_reply_build(ss, ELEMENTSOF(ss), &f, 1, 1, 0, FAULTS_KNOWN_ALL);
        rows = json_object_get(in_box, "rows");
        assert_int_equal(json_array_size(rows), 2);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(rows, 0), "process"), "pid")), 7);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(rows, 1), "process"), "pid")), 8);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(in_box, "total"), "faults"),
                                                            "user")),
                         5);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(in_box, "exited"), 0), "pid")),
                         8);
        /* Its pid 7 is host pid 5000 (not the host's pid 7). */
        f.pid = 7;
        by_pid = watch_reply_build(ss, ELEMENTSOF(ss), &f, 1, 1, 0, FAULTS_KNOWN_ALL);
        rows = json_object_get(by_pid, "rows");
        assert_int_equal(json_array_size(rows), 1);
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(rows, 0), "process"), "comm")),
                            "app");
        /* Without a namespace: every process, by host pid. */
        f = watch_filter(-1);
        all = watch_reply_build(ss, ELEMENTSOF(ss), &f, 1, 1, 0, FAULTS_KNOWN_ALL);
        assert_int_equal(json_integer_value(json_object_get(all, "processes")), 4);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(json_object_get(all, "rows"), 0),
                                                                            "process"),
                                                            "pid")),
                         7);
}

static void test_filters(void **state) {
        WatchFilter f = watch_filter(-1);

        f.process.unit = (char *) "a.service";
        check(&f, PIDS(10), PIDS(5, 30));
        /* No unit matches no glob, not even "*". */
        f.process.unit = (char *) "*";
        check(&f, PIDS(20, 10), PIDS(5, 30));
        f.uid = 1000;
        f.process.unit = (char *) "a.*";
        check(&f, NONE, PIDS(30));
        f.uid = -1;
        f.process.unit = NULL;

        f.process.comm = (char *) "al*";
        check(&f, PIDS(10), PIDS(5, 30));
        f.process.comm = (char *) "[^a]*";
        check(&f, PIDS(20, 40), PIDS(40));
        f.process.comm = NULL;

        f.process.uid = 0;
        check(&f, PIDS(10, 40), PIDS(5, 40));
        /* Another user's, asked by one who sees only their own: nothing. */
        f.uid = 1000;
        check(&f, NONE, NONE);
        f.uid = -1;
        f.process.uid = -1;

        assert_int_equal(process_filter_parse_pids(&f.process, "30,40"), 0);
        check(&f, PIDS(40), PIDS(30, 40));
        /* Watch's own pid with pids: the processes in both. */
        f.pid = 40;
        check(&f, PIDS(40), PIDS(40));
        assert_int_equal(process_filter_parse_pids(&f.process, "30"), 0);
        check(&f, NONE, NONE);
        f.process.n_pids = 0;
        check(&f, PIDS(40), PIDS(40));

        /* Everything at once. */
        f = watch_filter(-1);
        f.process.unit = (char *) "?.service";
        f.process.comm = (char *) "alpha*";
        f.process.uid = 1000;
        assert_int_equal(process_filter_parse_pids(&f.process, "10,20,30"), 0);
        check(&f, NONE, PIDS(30));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_visibility),
                cmocka_unit_test(test_filters),
                cmocka_unit_test(test_namespace),
                cmocka_unit_test(test_major_cause),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
