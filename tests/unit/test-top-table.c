/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "top-format.h"
#include "top-table.h"
#include "traps.h"

#define SEC UINT64_C(1000000)

/* A Process object as the daemon sends it. */
static json_t *process(int pid, const char *comm, const char *unit, int uid, bool exited, uint64_t last_seen) {
        json_t *p = json_pack("{s:i, s:I, s:s, s:i, s:b, s:I, s:I}", "pid", pid, "startTime", (json_int_t) pid * 1000,
                              "comm", comm, "uid", uid, "exited", exited, "firstSeenUsec", (json_int_t) 1,
                              "lastSeenUsec", (json_int_t) last_seen);

        assert_non_null(p);
        assert_int_equal(json_object_set_new(p, "unit", unit ? json_string(unit) : json_null()), 0);
        return p;
}

/* Counters as an older daemon sends them: no majorByCause (the causes not known). */
static json_t *counters(uint64_t user, const char *vector, uint64_t traps) {
        json_t *c = json_pack("{s:{s:I, s:i, s:i, s:i, s:I, s:i, s:i, s:i}, s:{}, s:{}}", "faults", "user", (json_int_t) user,
                              "kernel", 0, "minor", 0, "major", 0, "read", (json_int_t) user, "write", 0, "exec", 0,
                              "protection", 0, "traps", "signals");

        assert_non_null(c);
        if (vector)
                assert_int_equal(json_object_set_new(json_object_get(c, "traps"), vector, json_integer((json_int_t) traps)), 0);
        return c;
}

/* Counters of a daemon that tells major faults by cause (file < 0: null, it cannot tell), their
 * sum the major faults, and the fault time. */
static json_t *counters_major(int file, int anon, int shmem, uint64_t time_ns) {
        int major = file < 0 ? 3 : file + anon + shmem;
        json_t *c = json_pack("{s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}, s:{}, s:{}, s:{s:I, s:i, s:i, s:i, s:[]}}",
                              "faults", "user", 10, "kernel", 0, "minor", 10 - major, "major", major, "read", 10, "write",
                              0, "exec", 0, "protection", 0,
                              "traps", "signals", "faultTime", "minorNs", (json_int_t) time_ns, "majorNs", 0, "kernelNs", 0,
                              "maxNs", 0, "histogram");
        json_t *h = json_object_get(json_object_get(c, "faultTime"), "histogram");

        assert_non_null(c);
        for (int i = 0; i < 24; i++)
                assert_int_equal(json_array_append_new(h, json_integer(0)), 0);
        assert_int_equal(json_object_set_new(json_object_get(c, "faults"), "majorByCause",
                                             file < 0 ? json_null()
                                                      : json_pack("{s:i, s:i, s:i}", "file", file, "anon", anon, "shmem", shmem)),
                         0);
        return c;
}

/* Counters with the memory stall (the kernel's delay accounting), times in ms: reclaim and
 * swap-in are memory, blkio is not. what: 's' a Stall, 'n' null (the kernel keeps none), 'm'
 * missing (an older daemon), 'x' malformed (a member missing). */
static json_t *counters_stall(uint64_t user, char what, uint64_t swapin_ms, uint64_t reclaim_ms, uint64_t blkio_ms) {
        json_t *c = counters(user, NULL, 0), *s;

        switch (what) {
        case 'm':
                return c;
        case 'n':
                s = json_null();
                break;
        default:
                s = json_pack("{s:I, s:i, s:i, s:i, s:I, s:i, s:i, s:i, s:I, s:i}", "swapinNs",
                              (json_int_t) (swapin_ms * 1000000), "swapinCount", 1, "thrashingNs", 0, "thrashingCount",
                              0, "reclaimNs", (json_int_t) (reclaim_ms * 1000000), "reclaimCount", 2, "compactNs", 0,
                              "compactCount", 0, "blkioNs", (json_int_t) (blkio_ms * 1000000), "blkioCount", 3);
                assert_non_null(s);
                if (what == 'x')
                        assert_int_equal(json_object_del(s, "compactCount"), 0);
        }
        assert_int_equal(json_object_set_new(c, "stall", s), 0);
        return c;
}

static json_t *row(json_t *p, json_t *c) {
        return json_pack("{s:o, s:o}", "process", p, "counters", c);
}

/* A Watch reply at time t (seconds) of one second, with rows and exited (pid list, 0-ended). */
static json_t *tick(uint64_t t, json_t *rows, const int *exited) {
        json_t *e = json_array();

        for (size_t i = 0; exited && exited[i]; i++)
                json_array_append_new(e, json_pack("{s:i, s:I}", "pid", exited[i], "startTime", (json_int_t) exited[i] * 1000));
        return json_pack("{s:I, s:I, s:o, s:I, s:o, s:i, s:o}", "timeUsec", (json_int_t) (t * SEC), "intervalUsec",
                         (json_int_t) SEC, "total", counters(0, NULL, 0), "processes", (json_int_t) json_array_size(rows),
                         "rows", rows, "missedTicks", 0, "exited", e);
}

static TopRow *find(TopTable *t, int pid) {
        for (size_t i = 0; i < t->n_rows; i++)
                if (t->rows[i].pid == pid)
                        return &t->rows[i];
        return NULL;
}

/* The seed's counts are totals; a tick's counts are the next refresh's rates and add to the
 * totals; a process that trapped once stays, its rate back to zero, its total kept. */
static void test_rows_stay(void **state) {
        _cleanup_json_ json_t *seed = json_pack("{s:[o]}", "rows", row(process(10, "trapper", NULL, 0, false, 5 * SEC), counters(3, "UD", 2)));
        json_t *t1 = tick(100, json_pack("[o, o]", row(process(10, "trapper", NULL, 0, false, 100 * SEC), counters(1, "UD", 1)),
                                         row(process(20, "faulter", NULL, 0, false, 100 * SEC), counters(500, NULL, 0))),
                          NULL);
        json_t *t2 = tick(101, json_pack("[o]", row(process(20, "faulter", NULL, 0, false, 101 * SEC), counters(100, NULL, 0))), NULL);
        TopTable t;
        TopRow *r;

        top_table_init(&t, 100, 60 * SEC);
        assert_int_equal(top_table_seed(&t, seed), 0);
        r = find(&t, 10);
        assert_non_null(r);
        assert_int_equal(r->total.traps, 2);
        assert_int_equal(r->total.faults.user, 3);
        assert_int_equal(r->last.traps, 0);

        assert_int_equal(top_table_add_tick(&t, t1), 0);
        /* Not shown until the refresh. */
        assert_int_equal(find(&t, 10)->last.traps, 0);
        assert_int_equal(top_table_refresh(&t, 100 * SEC), 0);
        r = find(&t, 10);
        assert_int_equal(r->last.traps, 1);
        assert_int_equal(r->total.traps, 3);
        assert_int_equal(json_integer_value(json_object_get(r->total.vectors, "UD")), 3);
        assert_true(top_row_trapped_recently(&t, r, 5));
        assert_int_equal(t.interval_usec, SEC);

        assert_int_equal(top_table_add_tick(&t, t2), 0);
        assert_int_equal(top_table_refresh(&t, 101 * SEC), 0);
        r = find(&t, 10);
        assert_non_null(r);
        assert_int_equal(r->last.traps, 0);
        assert_int_equal(r->total.traps, 3);
        assert_int_equal(find(&t, 20)->last.faults.user, 100);
        assert_int_equal(find(&t, 20)->total.faults.user, 600);
        /* The highlight lasts n refreshes. */
        for (int i = 0; i < 3; i++)
                top_table_refresh(&t, (102 + i) * SEC);
        assert_true(top_row_trapped_recently(&t, find(&t, 10), 5));
        top_table_refresh(&t, 105 * SEC);
        assert_false(top_row_trapped_recently(&t, find(&t, 10), 5));

        json_decref(t1);
        json_decref(t2);
        top_table_done(&t);
}

/* An exited process is marked in the tick that says so and dropped once gone for the window;
 * over max_rows, exited rows go first, then those idle the longest. */
static void test_exited_and_bounds(void **state) {
        json_t *t1 = tick(100, json_pack("[o, o, o]", row(process(1, "a", NULL, 0, false, 0), counters(1, NULL, 0)),
                                         row(process(2, "b", NULL, 0, false, 0), counters(1, NULL, 0)),
                                         row(process(3, "c", NULL, 0, false, 0), counters(1, NULL, 0))),
                          (const int[]) { 2, 99, 0 });
        json_t *t2 = tick(110, json_pack("[o, o]", row(process(3, "c", NULL, 0, false, 0), counters(1, NULL, 0)),
                                         row(process(4, "d", NULL, 0, false, 0), counters(1, NULL, 0))),
                          NULL);
        TopTable t;

        top_table_init(&t, 3, 30 * SEC);
        assert_int_equal(top_table_add_tick(&t, t1), 0);
        assert_int_equal(top_table_refresh(&t, 100 * SEC), 0);
        assert_true(find(&t, 2)->exited);
        assert_false(find(&t, 1)->exited);
        assert_int_equal(t.n_rows, 3);

        /* Four rows, three kept: the exited one goes, not the idle live one. */
        assert_int_equal(top_table_add_tick(&t, t2), 0);
        assert_int_equal(top_table_refresh(&t, 110 * SEC), 0);
        assert_int_equal(t.n_rows, 3);
        assert_null(find(&t, 2));
        assert_non_null(find(&t, 1));

        /* Max rows again, with no exited row: the one idle the longest (1) goes. */
        json_decref(t2);
        t2 = tick(120, json_pack("[o]", row(process(5, "e", NULL, 0, false, 0), counters(1, NULL, 0))), (const int[]) { 4, 0 });
        assert_int_equal(top_table_add_tick(&t, t2), 0);
        assert_int_equal(top_table_refresh(&t, 120 * SEC), 0);
        assert_int_equal(t.n_rows, 3);
        assert_null(find(&t, 4)); /* exited just now: still the first to go past max_rows */
        assert_non_null(find(&t, 1));

        /* Exited for longer than the window: dropped. */
        json_decref(t1);
        t1 = tick(121, json_pack("[]"), (const int[]) { 1, 0 });
        assert_int_equal(top_table_add_tick(&t, t1), 0);
        assert_int_equal(top_table_refresh(&t, 121 * SEC), 0);
        assert_non_null(find(&t, 1));
        assert_int_equal(top_table_refresh(&t, 151 * SEC), 0);
        assert_non_null(find(&t, 1));
        assert_int_equal(top_table_refresh(&t, 152 * SEC), 0);
        assert_null(find(&t, 1));
        assert_non_null(find(&t, 3));

        json_decref(t1);
        json_decref(t2);
        top_table_done(&t);
}

/* Sorted by the rate, then by the total; grouped rows sum their processes; filters hide rows. */
static void test_view(void **state) {
        _cleanup_json_ json_t *seed = json_pack(
                "{s:[o, o, o, o]}", "rows", row(process(1, "web", "web.service", 1000, false, 0), counters(50, "UD", 1)),
                row(process(2, "web", "web.service", 1000, true, 90 * SEC), counters(10, "BP", 4)),
                row(process(3, "db", "db.service", 0, false, 0), counters(70, NULL, 0)),
                row(process(4, "sh", NULL, 0, false, 0), counters(5, NULL, 0)));
        json_t *t1 = tick(100, json_pack("[o]", row(process(4, "sh", NULL, 0, false, 0), counters(1, NULL, 0))), NULL);
        ProcessFilter f = PROCESS_FILTER_NONE;
        TopRow *rows;
        size_t n;
        SortKey user, traps;
        TopTable t;

        assert_int_equal(sort_key_from_name("user", &user), 0);
        assert_int_equal(sort_key_from_name("traps", &traps), 0);
        top_table_init(&t, 100, 60 * SEC);
        assert_int_equal(top_table_seed(&t, seed), 0);
        assert_int_equal(top_table_add_tick(&t, t1), 0);
        assert_int_equal(top_table_refresh(&t, 100 * SEC), 0);

        /* 4 has a rate: first; then by total user faults. */
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_PROCESS, &user, &rows, &n), 0);
        assert_int_equal(n, 4);
        assert_int_equal(rows[0].pid, 4);
        assert_int_equal(rows[1].pid, 3);
        assert_int_equal(rows[2].pid, 1);
        assert_int_equal(rows[3].pid, 2);
        top_rows_free(rows, n);

        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_UNIT, &traps, &rows, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(rows[0].key, "web.service");
        assert_int_equal(rows[0].processes, 2);
        assert_int_equal(rows[0].exited_processes, 1);
        assert_int_equal(rows[0].total.traps, 5);
        assert_int_equal(rows[0].total.faults.user, 60);
        assert_int_equal(json_integer_value(json_object_get(rows[0].total.vectors, "BP")), 4);
        /* No traps elsewhere: then by total faults. */
        assert_string_equal(rows[1].key, "db.service");
        assert_string_equal(rows[2].key, "-");
        top_rows_free(rows, n);

        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_USER, &user, &rows, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[0].processes + rows[1].processes, 4);
        top_rows_free(rows, n);

        f.comm = strdup("w*");
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_PROCESS, &user, &rows, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[0].pid, 1);
        top_rows_free(rows, n);
        process_filter_done(&f);
        f.unit = strdup("*");
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_COMM, &user, &rows, &n), 0);
        assert_int_equal(n, 2); /* sh has no unit */
        assert_string_equal(rows[0].key, "db");
        top_rows_free(rows, n);
        process_filter_done(&f);

        json_decref(t1);
        top_table_done(&t);
}

/* p with its pid namespace's pid and its container (runtime NULL: none; name NULL: none). */
static json_t *contained(json_t *p, int ns_pid, const char *runtime, const char *id, const char *name) {
        json_t *c = runtime ? json_pack("{s:s, s:s, s:o, s:n, s:n}", "runtime", runtime, "id", id, "name",
                                        name ? json_string(name) : json_null(), "pod", "user")
                            : json_null();

        assert_non_null(c);
        assert_int_equal(json_object_set_new(p, "nsPid", ns_pid ? json_integer(ns_pid) : json_null()), 0);
        assert_int_equal(json_object_set_new(p, "pidNamespace", json_integer(ns_pid ? 4026532175 : 4026531836)), 0);
        assert_int_equal(json_object_set_new(p, "container", c), 0);
        return p;
}

#define DOCKER_ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* --by container: one row per container, keyed by its name or by RUNTIME:ID12, "-" for the
 * processes in none; their counts summed. */
static void test_by_container(void **state) {
        _cleanup_json_ json_t *seed = json_pack(
                "{s:[o, o, o, o, o]}", "rows",
                row(contained(process(11, "web", "machine-web.scope", 0, false, 0), 2, "machined", "web", "web"),
                    counters(10, "UD", 7)),
                row(contained(process(12, "web", "machine-web.scope", 0, true, 90 * SEC), 3, "machined", "web", "web"),
                    counters(20, "UD", 3)),
                row(contained(process(13, "app", "docker-x.scope", 0, false, 0), 1, "docker", DOCKER_ID, NULL),
                    counters(5, "BP", 5)),
                row(contained(process(14, "sh", NULL, 0, false, 0), 14, NULL, NULL, NULL), counters(1, NULL, 0)),
                /* An older daemon: no members at all. */
                row(process(15, "old", NULL, 0, false, 0), counters(2, NULL, 0)));
        ProcessFilter f = PROCESS_FILTER_NONE;
        SortKey traps;
        TopRow *rows;
        TopTable t;
        TopGroup g;
        size_t n;

        assert_int_equal(top_group_from_name("container", &g), 0);
        assert_int_equal(g, TOP_GROUP_CONTAINER);
        assert_string_equal(top_group_name(TOP_GROUP_CONTAINER), "container");
        assert_int_equal(sort_key_from_name("traps", &traps), 0);
        top_table_init(&t, 100, 60 * SEC);
        assert_int_equal(top_table_seed(&t, seed), 0);
        assert_int_equal(top_table_refresh(&t, 100 * SEC), 0);

        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_CONTAINER, &traps, &rows, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(rows[0].key, "web");
        assert_int_equal(rows[0].processes, 2);
        assert_int_equal(rows[0].exited_processes, 1);
        assert_int_equal(rows[0].total.traps, 10);
        assert_int_equal(rows[0].total.faults.user, 30);
        assert_int_equal(json_integer_value(json_object_get(rows[0].total.vectors, "UD")), 10);
        assert_string_equal(rows[1].key, "docker:0123456789ab");
        assert_int_equal(rows[1].total.traps, 5);
        /* The process in no container and the one an older daemon did not place: one row. */
        assert_string_equal(rows[2].key, "-");
        assert_int_equal(rows[2].processes, 2);
        assert_int_equal(rows[2].total.faults.user, 3);
        top_rows_free(rows, n);
        top_table_done(&t);
}

/* NSPID where a process's pid in its namespace differs; CONTAINER as wide as the widest key, at
 * most TOP_CONTAINER_WIDTH; neither for group rows. */
static void test_layout(void **state) {
        _cleanup_json_ json_t *host = contained(process(1, "init", NULL, 0, false, 0), 1, NULL, NULL, NULL);
        _cleanup_json_ json_t *unknown = contained(process(2, "x", NULL, 0, false, 0), 0, NULL, NULL, NULL);
        _cleanup_json_ json_t *inside = contained(process(3, "app", NULL, 0, false, 0), 7, "docker", DOCKER_ID, NULL);
        _cleanup_json_ json_t *long_name = contained(process(4, "x", NULL, 0, false, 0), 4, "machined", "m",
                                                     "a-machine-with-a-name-longer-than-the-column-is-wide");
        _cleanup_json_ json_t *hostile = contained(process(5, "x", NULL, 0, false, 0), 5, "lxc", "e", "\x1b]0;owned\a");
        TopLayout l = {};
        char buf[24], *cell = NULL;

        assert_false(top_process_has_ns_pid(host));
        assert_false(top_process_has_ns_pid(unknown));
        assert_true(top_process_has_ns_pid(inside));
        assert_string_equal(top_ns_pid_cell(inside, buf), "7");
        assert_string_equal(top_ns_pid_cell(unknown, buf), "-");

        top_layout_add(&l, host, true);
        top_layout_add(&l, unknown, true);
        assert_false(l.ns_pid);
        assert_int_equal(l.container_width, 0);
        top_layout_add(&l, inside, true);
        assert_true(l.ns_pid);
        assert_int_equal(l.container_width, strlen("docker:0123456789ab"));
        top_layout_add(&l, long_name, true);
        assert_int_equal(l.container_width, TOP_CONTAINER_WIDTH);

        assert_int_equal(top_container_cell(inside, true, 22, &cell), 0);
        assert_string_equal(cell, "docker:0123456789ab   ");
        free(cell);
        assert_int_equal(top_container_cell(long_name, true, 10, &cell), 0);
        assert_string_equal(cell, "a-machine-");
        free(cell);
        assert_int_equal(top_container_cell(host, true, 3, &cell), 0);
        assert_string_equal(cell, "-  ");
        free(cell);
        /* A name is untrusted text: escaped like a unit's. */
        assert_int_equal(top_container_cell(hostile, true, 0, &cell), 0);
        assert_string_equal(cell, "\\e]0;owned\\a");
        free(cell);
        l = (TopLayout) {};
        top_layout_add(&l, hostile, true);
        assert_int_equal(l.container_width, strlen("\\e]0;owned\\a"));

        /* From rows: per process only. */
        {
                TopRow rows[2] = { { .process = host }, { .process = inside } };

                SortKey user;

                assert_int_equal(sort_key_from_name("user", &user), 0);
                top_rows_layout(rows, 1, TOP_GROUP_PROCESS, &user, true, &l);
                assert_false(l.ns_pid);
                assert_int_equal(l.container_width, 0);
                top_rows_layout(rows, 2, TOP_GROUP_PROCESS, &user, true, &l);
                assert_true(l.ns_pid);
                assert_int_equal(l.container_width, strlen("docker:0123456789ab"));
                /* No major fault: no columns of their causes. */
                assert_false(l.major_causes);
                top_rows_layout(rows, 2, TOP_GROUP_UNIT, &user, true, &l);
                assert_false(l.ns_pid);
                assert_int_equal(l.container_width, 0);
        }
}

/* What is not a reply is refused, and the table stays usable. */
static void test_malformed(void **state) {
        _cleanup_json_ json_t *no_rows = json_pack("{s:I}", "intervalUsec", (json_int_t) SEC);
        _cleanup_json_ json_t *bad_process = json_pack("{s:I, s:[{s:s}]}", "intervalUsec", (json_int_t) SEC, "rows", "process", "x");
        _cleanup_json_ json_t *bad_seed = json_pack("{s:[{s:o, s:{}}]}", "rows", "process", process(1, "a", NULL, 0, false, 0), "counters");
        TopGroup g;
        TopTable t;

        top_table_init(&t, 10, SEC);
        assert_int_equal(top_table_add_tick(&t, no_rows), -EBADMSG);
        assert_int_equal(top_table_add_tick(&t, bad_process), -EBADMSG);
        assert_int_equal(top_table_seed(&t, bad_seed), -EBADMSG);
        assert_int_equal(top_table_seed(&t, no_rows), -EBADMSG);
        assert_int_equal(top_table_refresh(&t, SEC), 0);
        top_table_done(&t);

        assert_int_equal(top_group_from_name("unit", &g), 0);
        assert_int_equal(g, TOP_GROUP_UNIT);
        assert_int_equal(top_group_from_name("units", &g), -EINVAL);
        assert_string_equal(top_group_name(TOP_GROUP_USER), "user");
}

/* Major faults by cause: kept per process from the seed and the ticks, summed by group, sorted
 * by; unknown (null, or missing from an older daemon) stays unknown in every sum it is in. */
static void test_major_causes(void **state) {
        _cleanup_json_ json_t *seed = json_pack(
                "{s:[o, o, o, o]}", "rows", row(process(1, "reader", "db.service", 0, false, 0), counters_major(6, 0, 0, 0)),
                row(process(2, "swapper", "db.service", 0, false, 0), counters_major(0, 5, 2, 0)),
                row(process(3, "ipc", "ipc.service", 0, false, 0), counters_major(0, 0, 4, 0)),
                row(process(4, "old", "old.service", 0, false, 0), counters(1, NULL, 0)));
        json_t *t1 = tick(100, json_pack("[o, o]", row(process(2, "swapper", "db.service", 0, false, 0), counters_major(1, 3, 0, 0)),
                                         row(process(5, "blind", "old.service", 0, false, 0), counters_major(-1, 0, 0, 0))),
                          NULL);
        ProcessFilter f = PROCESS_FILTER_NONE;
        SortKey file, anon, shmem;
        TopLayout l;
        TopRow *rows;
        TopTable t;
        size_t n;

        assert_int_equal(top_sort_from_arg("file", &file), 0);
        assert_int_equal(top_sort_from_arg("anon", &anon), 0);
        assert_int_equal(top_sort_from_arg("shmem", &shmem), 0);
        top_table_init(&t, 100, 60 * SEC);
        assert_int_equal(top_table_seed(&t, seed), 0);
        assert_int_equal(top_table_add_tick(&t, t1), 0);
        assert_int_equal(top_table_refresh(&t, 100 * SEC), 0);
        assert_int_equal(find(&t, 2)->total.faults.major_anon, 8);
        assert_int_equal(find(&t, 2)->last.faults.major_anon, 3);
        assert_int_equal(find(&t, 2)->total.faults.major_file, 1);
        assert_int_equal(find(&t, 2)->total.faults.unknown, 0);
        /* An older daemon's row and a null's: not counted, whatever the zeros say. */
        assert_int_equal(find(&t, 4)->total.faults.unknown, FAULTS_KNOWN_MAJOR_CAUSE);
        assert_int_equal(find(&t, 5)->total.faults.unknown, FAULTS_KNOWN_MAJOR_CAUSE);
        assert_int_equal(find(&t, 5)->last.faults.unknown, FAULTS_KNOWN_MAJOR_CAUSE);

        /* By the last refresh's rate first (only 2 had a tick), then by the totals. */
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_PROCESS, &anon, &rows, &n), 0);
        assert_int_equal(n, 5);
        assert_int_equal(rows[0].pid, 2);
        top_rows_free(rows, n);
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_PROCESS, &file, &rows, &n), 0);
        assert_int_equal(rows[0].pid, 2);
        assert_int_equal(rows[1].pid, 1);
        top_rows_free(rows, n);
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_PROCESS, &shmem, &rows, &n), 0);
        assert_int_equal(rows[0].pid, 3);
        assert_int_equal(rows[1].pid, 2);
        top_rows_layout(rows, n, TOP_GROUP_PROCESS, &shmem, true, &l);
        assert_true(l.major_causes);
        top_rows_free(rows, n);

        /* Grouped: summed; a unit with a process whose causes are unknown has them unknown. */
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_UNIT, &anon, &rows, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(rows[0].key, "db.service");
        assert_int_equal(rows[0].total.faults.major_file, 7);
        assert_int_equal(rows[0].total.faults.major_anon, 8);
        assert_int_equal(rows[0].total.faults.major_shmem, 2);
        assert_int_equal(rows[0].total.faults.major, 17);
        assert_int_equal(rows[0].last.faults.major_anon, 3);
        assert_int_equal(rows[0].total.faults.unknown, 0);
        /* Then by total anon (none), then by all faults: old's two processes have more. */
        assert_string_equal(rows[1].key, "old.service");
        assert_int_equal(rows[1].processes, 2);
        assert_int_equal(rows[1].total.faults.unknown, FAULTS_KNOWN_MAJOR_CAUSE);
        assert_string_equal(rows[2].key, "ipc.service");
        assert_int_equal(rows[2].total.faults.major_shmem, 4);
        /* The causes' columns: where a row had a major fault of a cause told, or sorted by one. */
        top_rows_layout(rows, n, TOP_GROUP_UNIT, &file, true, &l);
        assert_true(l.major_causes);
        top_rows_layout(rows + 1, 1, TOP_GROUP_UNIT, &file, true, &l);
        assert_true(l.major_causes);
        {
                SortKey user;

                assert_int_equal(sort_key_from_name("user", &user), 0);
                top_rows_layout(rows + 1, 1, TOP_GROUP_UNIT, &user, true, &l);
                assert_false(l.major_causes);
                top_rows_layout(rows, 1, TOP_GROUP_UNIT, &user, true, &l);
                assert_true(l.major_causes);
                top_rows_layout(rows + 2, 1, TOP_GROUP_UNIT, &user, true, &l);
                assert_true(l.major_causes);
                /* Counted, none: zeros are no reason for three columns. */
                rows[2].total.faults.major_shmem = 0;
                top_rows_layout(rows + 2, 1, TOP_GROUP_UNIT, &user, true, &l);
                assert_false(l.major_causes);
        }
        top_rows_free(rows, n);
        assert_true(top_table_knows_major_causes(&t));
        json_decref(t1);
        top_table_done(&t);

        /* Only an older daemon's rows, and a null's: the daemon does not count them. */
        top_table_init(&t, 100, 60 * SEC);
        t1 = tick(100, json_pack("[o, o]", row(process(4, "old", "old.service", 0, false, 0), counters(1, NULL, 0)),
                                 row(process(5, "blind", "old.service", 0, false, 0), counters_major(-1, 0, 0, 0))),
                  NULL);
        assert_int_equal(top_table_add_tick(&t, t1), 0);
        assert_int_equal(top_table_refresh(&t, 100 * SEC), 0);
        assert_false(top_table_knows_major_causes(&t));
        json_decref(t1);
        top_table_done(&t);
}

/* The memory stall: a tick's is the rate (share of the interval), summed with the seed into
 * the totals; null and missing are not counted, and stay so in every sum they are in; sorted by
 * the memory's part (blkio not in it); %STALL shown where a row knows it, or sorted by it. */
static void test_stall(void **state) {
        _cleanup_json_ json_t *seed =
                json_pack("{s:[o, o, o, o]}", "rows",
                          row(process(1, "swapper", "db.service", 0, false, 0), counters_stall(1, 's', 1000, 0, 0)),
                          row(process(2, "reader", "db.service", 0, false, 0), counters_stall(1, 's', 0, 0, 9000)),
                          row(process(3, "blind", "old.service", 0, false, 0), counters_stall(1, 'n', 0, 0, 0)),
                          row(process(4, "old", "old.service", 0, false, 0), counters_stall(1, 'm', 0, 0, 0)));
        /* 250 ms of memory in a tick of 1 s, and 500 ms of block I/O that are not. */
        json_t *t1 = tick(
                100,
                json_pack("[o, o, o]",
                          row(process(2, "reader", "db.service", 0, false, 0), counters_stall(1, 's', 100, 150, 500)),
                          row(process(3, "blind", "old.service", 0, false, 0), counters_stall(1, 'n', 0, 0, 0)),
                          row(process(4, "old", "old.service", 0, false, 0), counters_stall(1, 'm', 0, 0, 0))),
                NULL);
        _cleanup_json_ json_t *bad = tick(
                101, json_pack("[o]", row(process(5, "x", NULL, 0, false, 0), counters_stall(1, 'x', 1, 1, 1))), NULL);
        ProcessFilter f = PROCESS_FILTER_NONE;
        SortKey stall, user;
        char buf[16], *line = NULL;
        TopLayout l;
        TopRow *rows;
        TopTable t;
        size_t n;

        assert_int_equal(top_sort_from_arg("stall", &stall), 0);
        assert_int_equal(stall.what, SORT_STALL);
        assert_int_equal(sort_key_from_name("user", &user), 0);
        top_table_init(&t, 100, 60 * SEC);
        assert_int_equal(top_table_seed(&t, seed), 0);
        assert_int_equal(top_table_add_tick(&t, t1), 0);
        assert_int_equal(top_table_refresh(&t, 100 * SEC), 0);
        assert_int_equal(find(&t, 2)->last.stall.ns[STALL_RECLAIM], 150000000);
        assert_int_equal(stall_memory_ns(&find(&t, 2)->last.stall), 250000000);
        assert_int_equal(find(&t, 2)->total.stall.ns[STALL_BLKIO], 9500000000);
        assert_int_equal(find(&t, 2)->total.stall.count[STALL_BLKIO], 6);
        assert_false(find(&t, 2)->total.stall_unknown);
        assert_true(find(&t, 3)->total.stall_unknown);
        assert_true(find(&t, 3)->last.stall_unknown);
        assert_true(find(&t, 4)->total.stall_unknown);
        assert_true(top_table_knows_stall(&t));

        /* By the last refresh's memory stall, then by the total's: 2's blkio does not count, 1's
         * swap-in does; the rows not counted last (then by all faults, as many, then by pid). */
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_PROCESS, &stall, &rows, &n), 0);
        assert_int_equal(n, 4);
        assert_int_equal(rows[0].pid, 2);
        assert_int_equal(rows[1].pid, 1);
        assert_int_equal(rows[2].pid, 3);
        assert_int_equal(rows[3].pid, 4);
        top_rows_layout(rows + 2, 2, TOP_GROUP_PROCESS, &user, true, &l);
        assert_false(l.stall);
        top_rows_layout(rows + 2, 2, TOP_GROUP_PROCESS, &stall, true, &l);
        assert_true(l.stall);
        top_rows_layout(rows, n, TOP_GROUP_PROCESS, &user, true, &l);
        assert_true(l.stall);
        /* The rate over the tick: 25.0; "-" for null and for an older daemon; 0 for 1, which did
         * not wait in the tick. */
        assert_int_equal(top_format_row(&rows[0], TOP_GROUP_PROCESS, &l, t.interval_usec, ' ', true, &line), 0);
        assert_string_equal(
                line,
                "      2   reader                1.0         0         0         0         0      25.0         2       "
                "0  -                    db.service");
        free(line);
        assert_int_equal(top_format_row(&rows[1], TOP_GROUP_PROCESS, &l, t.interval_usec, ' ', true, &line), 0);
        assert_string_equal(
                line,
                "      1   swapper                 0         0         0         0         0         0         1       "
                "0  -                    db.service");
        free(line);
        for (size_t i = 2; i < 4; i++) {
                assert_int_equal(top_format_row(&rows[i], TOP_GROUP_PROCESS, &l, t.interval_usec, ' ', true, &line), 0);
                assert_non_null(strstr(line, "         0         -         2       0  -"));
                free(line);
        }
        top_rows_free(rows, n);

        /* Grouped: summed, and a unit with a process not counted is not counted. */
        assert_int_equal(top_table_view(&t, &f, TOP_GROUP_UNIT, &stall, &rows, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(rows[0].key, "db.service");
        assert_false(rows[0].total.stall_unknown);
        assert_int_equal(stall_memory_ns(&rows[0].total.stall), 1250000000);
        assert_string_equal(top_format_stall_share(&rows[0].total.stall, 5 * SEC, buf), "25.0");
        assert_string_equal(rows[1].key, "old.service");
        assert_true(rows[1].total.stall_unknown);
        top_rows_free(rows, n);
        json_decref(t1);
        top_table_done(&t);

        /* Only rows not counted: the daemon does not count the stall. */
        top_table_init(&t, 100, 60 * SEC);
        t1 = tick(100,
                  json_pack("[o, o]",
                            row(process(3, "blind", "old.service", 0, false, 0), counters_stall(1, 'n', 0, 0, 0)),
                            row(process(4, "old", "old.service", 0, false, 0), counters_stall(1, 'm', 0, 0, 0))),
                  NULL);
        assert_int_equal(top_table_add_tick(&t, t1), 0);
        assert_false(top_table_knows_stall(&t));
        /* A malformed stall is a malformed reply, not "not counted". */
        assert_int_equal(top_table_add_tick(&t, bad), -EBADMSG);
        json_decref(t1);
        top_table_done(&t);
}

/* %STALL's cell: the memory's part of the stall (not blkio) per interval, as %CPU. */
static void test_stall_share(void **state) {
        _cleanup_json_ json_t *null_counters = counters_stall(1, 'n', 0, 0, 0);
        _cleanup_json_ json_t *old_counters = counters_stall(1, 'm', 0, 0, 0);
        _cleanup_json_ json_t *bad_counters = counters_stall(1, 'x', 0, 0, 0);
        _cleanup_json_ json_t *c = counters_stall(1, 's', 100, 150, 700);
        Stall s = {};
        char buf[16];

        assert_int_equal(top_counters_stall(c, &s), 0);
        assert_int_equal(s.ns[STALL_SWAPIN], 100000000);
        assert_int_equal(s.count[STALL_RECLAIM], 2);
        assert_int_equal(s.ns[STALL_BLKIO], 700000000);
        assert_string_equal(top_format_stall_share(&s, SEC, buf), "25.0");
        assert_string_equal(top_format_stall_share(&s, 10 * SEC, buf), "2.5");
        /* Several threads waiting: over 100, as %CPU. */
        assert_string_equal(top_format_stall_share(&s, SEC / 8, buf), "200.0");
        assert_string_equal(top_format_stall_share(&s, 0, buf), "-");
        assert_string_equal(top_format_stall_share(NULL, SEC, buf), "-");
        s = (Stall){ .ns[STALL_BLKIO] = 5000000000 };
        assert_string_equal(top_format_stall_share(&s, SEC, buf), "0");
        s = (Stall){ .ns[STALL_COMPACT] = 400000 };
        assert_string_equal(top_format_stall_share(&s, SEC, buf), "<0.1");

        assert_int_equal(top_counters_stall(null_counters, &s), -ENODATA);
        assert_int_equal(top_counters_stall(old_counters, &s), -ENODATA);
        assert_int_equal(top_counters_stall(bad_counters, &s), -EBADMSG);
}

/* --sort: the IDL's names, and the short ones people type. */
static void test_sort_args(void **state) {
        static const char *const names[][2] = {
                { "user", "user" },      { "protection", "protection" }, { "traps", "traps" },
                { "time", "faultTime" }, { "faultTime", "faultTime" },   { "file", "majorFile" },
                { "anon", "majorAnon" }, { "shmem", "majorShmem" },      { "majorFile", "majorFile" },
                { "stall", "stall" },    { "majorAnon", "majorAnon" },   { "majorShmem", "majorShmem" },
        };
        SortKey k;

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                assert_int_equal(top_sort_from_arg(names[i][0], &k), 0);
                assert_string_equal(k.name, names[i][1]);
        }
        assert_true(top_sort_is_major_cause(&k));
        assert_int_equal(top_sort_from_arg("shmem", &k), 0);
        assert_int_equal(k.field->offset, offsetof(Faults, major_shmem));
        assert_int_equal(top_sort_from_arg("time", &k), 0);
        assert_false(top_sort_is_major_cause(&k));
        assert_int_equal(top_sort_from_arg("major", &k), 0);
        assert_false(top_sort_is_major_cause(&k));
        for (const char *const *bad = (const char *const[]) { "File", "majorfile", "majorByCause", "cause", "", NULL }; *bad;
             bad++)
                assert_int_equal(top_sort_from_arg(*bad, &k), -EINVAL);
        assert_int_equal(top_sort_from_arg(NULL, &k), -EINVAL);
}

/* The rate table's header and rows, byte for byte: FILE/s ANON/s SHMEM/s after MAJOR/s where the
 * layout has them, "-" in them for a row whose causes were not counted; < and > over the columns
 * shown. */
static void test_format(void **state) {
        _cleanup_json_ json_t *p = process(42, "app", "app.service", 0, false, 0);
        TopRow r = { .pid = 42,
                     .process = p,
                     .last = { .faults = { .user = 200, .major = 6, .major_file = 4, .major_anon = 2 },
                               .time_ns = 500000000,
                               .traps = 2 },
                     .total = { .faults = { .user = 1200, .kernel = 34, .major = 9, .major_file = 7, .major_anon = 2 },
                                .traps = 5 } };
        TopLayout with = { .major_causes = true }, without = {};
        SortKey sort;
        char buf[512];
        char *line = NULL;
        int x;

        assert_int_equal(sort_key_from_name("user", &sort), 0);
        top_format_header(buf, sizeof(buf), &sort, TOP_GROUP_PROCESS, &without, true, &x);
        assert_string_equal(buf, "    PID S COMM              *USER/s  KERNEL/s   MAJOR/s   TRAPS/s    %FAULT    FAULTS   "
                                 "TRAPS  VECTORS              UNIT");
        assert_int_equal(x, 26);
        assert_int_equal(top_format_row(&r, TOP_GROUP_PROCESS, &without, 2 * SEC, ' ', true, &line), 0);
        assert_string_equal(line, "     42   app                   100         0       3.0       1.0      25.0     1.23k       "
                                  "5  -                    app.service");
        free(line);

        assert_int_equal(top_sort_from_arg("anon", &sort), 0);
        top_format_header(buf, sizeof(buf), &sort, TOP_GROUP_PROCESS, &with, true, &x);
        assert_string_equal(buf, "    PID S COMM               USER/s  KERNEL/s   MAJOR/s    FILE/s   *ANON/s   SHMEM/s   "
                                 "TRAPS/s    %FAULT    FAULTS   TRAPS  VECTORS              UNIT");
        assert_int_equal(x, 25 + 4 * 10 + 1);
        assert_string_equal(buf + x, "  *ANON/s   SHMEM/s   TRAPS/s    %FAULT    FAULTS   TRAPS  VECTORS              UNIT");
        assert_int_equal(top_format_row(&r, TOP_GROUP_PROCESS, &with, 2 * SEC, 'T', true, &line), 0);
        assert_string_equal(line, "     42 T app                   100         0       3.0       2.0       1.0         0       "
                                  "1.0      25.0     1.23k       5  -                    app.service");
        free(line);
        /* Not counted (an older daemon, a kernel before 5.17): "-", never a false zero. */
        r.total.faults.unknown = FAULTS_KNOWN_MAJOR_CAUSE;
        assert_int_equal(top_format_row(&r, TOP_GROUP_PROCESS, &with, 2 * SEC, ' ', true, &line), 0);
        assert_string_equal(line, "     42   app                   100         0       3.0         -         -         -       "
                                  "1.0      25.0     1.23k       5  -                    app.service");
        free(line);
        /* A group row, sorted by a column not shown (minor): nothing marked. */
        r.key = (char *) "app.service";
        r.processes = 3;
        assert_int_equal(sort_key_from_name("minor", &sort), 0);
        top_format_header(buf, sizeof(buf), &sort, TOP_GROUP_UNIT, &with, true, &x);
        assert_string_equal(buf, "  PROCS S    USER/s  KERNEL/s   MAJOR/s    FILE/s    ANON/s   SHMEM/s   TRAPS/s    "
                                 "%FAULT    FAULTS   TRAPS  VECTORS              UNIT");
        assert_int_equal(x, -1);
        assert_int_equal(top_format_row(&r, TOP_GROUP_UNIT, &with, 2 * SEC, 'X', true, &line), 0);
        assert_string_equal(line, "      3 X       100         0       3.0         -         -         -       1.0      "
                                  "25.0     1.23k       5  -                    app.service");
        free(line);

        /* < and >: over the columns shown, the edges stay. */
        assert_string_equal(top_columns[top_column_step(2, 1, &without)].sort, "traps");
        assert_string_equal(top_columns[top_column_step(6, -1, &without)].sort, "major");
        assert_string_equal(top_columns[top_column_step(2, 1, &with)].sort, "majorFile");
        assert_string_equal(top_columns[top_column_step(6, -1, &with)].sort, "majorShmem");
        assert_int_equal(top_column_step(0, -1, &with), 0);
        assert_int_equal(top_column_step(7, 1, &with), 7);
        assert_int_equal(top_column_step(-1, 1, &with), 0);
        assert_false(top_column_shown(3, &without));
        assert_true(top_column_shown(3, &with));
        assert_true(top_column_shown(6, &without));
        /* %STALL, last, where the layout has it: sorted by it, marked. */
        assert_false(top_column_shown(8, &with));
        with.stall = true;
        assert_true(top_column_shown(8, &with));
        assert_int_equal(top_column_step(7, 1, &with), 8);
        assert_int_equal(top_column_step(8, 1, &with), 8);
        assert_int_equal(sort_key_from_name("stall", &sort), 0);
        top_format_header(buf, sizeof(buf), &sort, TOP_GROUP_PROCESS, &with, true, &x);
        assert_string_equal(buf,
                            "    PID S COMM               USER/s  KERNEL/s   MAJOR/s    FILE/s    ANON/s   SHMEM/s   "
                            "TRAPS/s    %FAULT   *%STALL    FAULTS   TRAPS  VECTORS              UNIT");
        assert_int_equal(x, 25 + 8 * 10 + 1);
        /* r's stall was never counted: "-" (its zeros say nothing). */
        r.total.stall_unknown = true;
        r.key = NULL;
        assert_int_equal(top_format_row(&r, TOP_GROUP_PROCESS, &with, 2 * SEC, ' ', true, &line), 0);
        assert_string_equal(
                line, "     42   app                   100         0       3.0         -         -         -       "
                      "1.0      25.0         -     1.23k       5  -                    app.service");
        free(line);
        with.stall = false;
        for (size_t i = 0; i < TOP_N_COLUMNS; i++) {
                assert_int_equal(sort_key_from_name(top_columns[i].sort, &sort), 0);
                assert_int_equal(top_column_of(&sort), (int) i);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows_stay),    cmocka_unit_test(test_exited_and_bounds),
                cmocka_unit_test(test_view),         cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_by_container), cmocka_unit_test(test_layout),
                cmocka_unit_test(test_major_causes), cmocka_unit_test(test_stall),
                cmocka_unit_test(test_stall_share),  cmocka_unit_test(test_sort_args),
                cmocka_unit_test(test_format),
        };
        /* Written with x86's trap names, whatever the machine (common/traps.h). */
        trap_arch = TRAP_ARCH_X86;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
