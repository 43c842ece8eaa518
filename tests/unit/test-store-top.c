/* SPDX-License-Identifier: MIT */
/* Top and Traps (store-top.c): flushed ticks ranked, filtered, with the pending ticks. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit-store.h"
#include "unit-tmpdir.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "store.h"
DEFINE_TEST_TMPDIR("test-store-top");
#include "unit-store-db.h"

static void test_flush_top_history(void **state) {
        char path[256];
        Store *s;
        ProcessInfo a = { .pid = 100, .start_time = 5000, .comm = "alpha", .uid = 1000, .first_seen_usec = 1 };
        ProcessInfo a2 = { .pid = 100, .start_time = 9000, .comm = "alpha-again", .uid = 1000, .first_seen_usec = 2 };
        ProcessInfo b = { .pid = 200, .start_time = 6000, .comm = "beta", .uid = 0, .first_seen_usec = 1,
                          .cmdline = (char *) "beta --flag", .unit = (char *) "beta.service" };
        const uint64_t t0 = 1700000000000000ULL; /* a bucket boundary */
        StoreHistoryRow *hist;
        StoreRow *rows;
        ProcessInfo found;
        uint64_t other;
        int64_t id;
        size_t n;

        snprintf(path, sizeof(path), "%s/store.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);

        /* Three ticks in one 10 s bucket, one in the next: deltas add up per bucket. */
        for (int tick = 0; tick < 3; tick++) {
                ProcessSample samples[] = { { &a, make_faults(10) }, { &b, make_faults(1) } };
                assert_int_equal(store_flush(s, t0 + (uint64_t) tick * 1000000, samples, 2), 0);
        }
        {
                ProcessSample samples[] = { { &a, make_faults(100) }, { &b, (Faults) {} } };
                assert_int_equal(store_flush(s, t0 + 12000000, samples, 2), 0);
        }

        /* Top since t0: a has 3*10 + 100 user faults, b 3*1; a first. */
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[0].process.pid, 100);
        assert_int_equal(rows[0].faults.user, 130);
        assert_int_equal(rows[0].faults.protection, 3 * 17 + 107);
        assert_int_equal(rows[1].process.pid, 200);
        assert_int_equal(rows[1].faults.user, 3);
        assert_string_equal(rows[1].process.cmdline, "beta --flag");
        assert_string_equal(rows[1].process.unit, "beta.service");
        store_rows_free(rows, n);

        /* Only the second bucket; and only uid 0's processes. */
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0 + 10000000, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].faults.user, 100);
        store_rows_free(rows, n);
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "user", 10, 0, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].process.pid, 200);
        store_rows_free(rows, n);

        /* History at 10 s and at 60 s resolution: the sums are preserved exactly. */
        assert_int_equal(store_find_process(s, 100, 0, &id, &found), 0);
        assert_int_equal(found.start_time, 5000);
        process_info_done(&found);
        assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, STORE_RAW_BUCKET_USEC, &hist, &n)), 0);
        assert_int_equal(n, 2);
        assert_int_equal(hist[0].time_usec, t0);
        assert_int_equal(hist[0].faults.user, 30);
        assert_int_equal(hist[1].time_usec, t0 + 10000000);
        assert_int_equal(hist[1].faults.user, 100);
        store_history_rows_free(hist, n);
        assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, 6 * STORE_RAW_BUCKET_USEC, &hist, &n)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].faults.user, 130);
        assert_int_equal(hist[0].faults.major, 3 * 13 + 103);
        store_history_rows_free(hist, n);
        assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, 15000000, &hist, &n)), -EINVAL);

        /* The same pid again with another start time: a separate process, and the newest wins. */
        {
                ProcessSample samples[] = { { &a2, make_faults(7) } };
                assert_int_equal(store_flush(s, t0 + 20000000, samples, 1), 0);
        }
        assert_int_equal(store_find_process(s, 100, 0, &id, &found), 0);
        assert_int_equal(found.start_time, 9000);
        assert_string_equal(found.comm, "alpha-again");
        process_info_done(&found);
        assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, STORE_RAW_BUCKET_USEC, &hist, &n)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].faults.user, 7);
        store_history_rows_free(hist, n);
        assert_int_equal(store_find_process(s, 100, 5000, &id, &found), 0);
        assert_string_equal(found.comm, "alpha");
        process_info_done(&found);
        assert_int_equal(store_find_process(s, 300, 0, &id, &found), -ENOENT);

        store_free(s);

        /* Reopening an existing, current database migrates nothing and keeps the data. */
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        /* Both incarnations of pid 100 and pid 200, the first sorted by its 130 user faults. */
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 3);
        assert_int_equal(rows[0].process.start_time, 5000);
        assert_int_equal(rows[0].faults.user, 130);
        assert_int_equal(rows[1].process.start_time, 9000);
        assert_int_equal(rows[1].faults.user, 7);
        assert_int_equal(rows[2].process.pid, 200);
        store_rows_free(rows, n);
        /* limit applies, and what it left out is counted. */
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "user", 1, -1, NULL, &rows, &n, &other)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(other, 2);
        store_rows_free(rows, n);
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "user", 3, -1, NULL, &rows, &n, &other)), 0);
        assert_int_equal(n, 3);
        assert_int_equal(other, 0);
        store_rows_free(rows, n);
        store_free(s);
}

static void test_traps(void **state) {
        char path[256];
        Store *s;
        ProcessInfo a = { .pid = 300, .start_time = 1, .comm = "trapper", .first_seen_usec = 1 };
        ProcessInfo b = { .pid = 301, .start_time = 1, .comm = "faulter", .first_seen_usec = 1 };
        const uint64_t t0 = 1700000000000000ULL;
        Traps t = {};
        StoreHistoryRow *hist;
        StoreRow *rows;
        ProcessInfo found;
        int64_t id;
        size_t n;

        snprintf(path, sizeof(path), "%s/traps.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);

        /* 5 #UD (SIGILL/ILL_ILLOPN) and 2 #GP (SIGSEGV/SI_KERNEL), no faults at all; twice, in
         * two buckets. b only faults. */
        t.vector[6] = 5;
        t.vector[13] = 2;
        t.signal[fault_signal_index(SIGILL)][si_code_slot(2)] = 5;
        t.signal[fault_signal_index(SIGSEGV)][si_code_slot(0x80)] = 2;
        for (int i = 0; i < 2; i++) {
                ProcessSample samples[] = { { &a, (Faults) {}, &t }, { &b, make_faults(1), NULL } };
                assert_int_equal(store_flush(s, t0 + (uint64_t) i * 10000000, samples, 2), 0);
        }

        /* Sorted by traps, the trapper comes first although it never faulted. */
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "traps", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 2);
        assert_string_equal(rows[0].process.comm, "trapper");
        assert_int_equal(rows[0].traps.vector[6], 10);
        assert_int_equal(rows[0].traps.vector[13], 4);
        assert_int_equal(rows[0].traps.signal[fault_signal_index(SIGILL)][si_code_slot(2)], 10);
        assert_int_equal(rows[0].traps.signal[fault_signal_index(SIGSEGV)][0], 4);
        assert_int_equal(traps_total(&rows[0].traps), 14);
        assert_true(faults_is_zero(&rows[0].faults));
        assert_int_equal(traps_total(&rows[1].traps), 0);
        store_rows_free(rows, n);
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "nonsense", 10, -1, NULL, &rows, &n, NULL)), -EINVAL);

        /* History per bucket and merged into one interval. */
        assert_int_equal(store_find_process(s, 300, 0, &id, &found), 0);
        process_info_done(&found);
        assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, STORE_RAW_BUCKET_USEC, &hist, &n)), 0);
        assert_int_equal(n, 2);
        assert_int_equal(hist[0].traps->vector[6], 5);
        assert_int_equal(hist[1].traps->vector[13], 2);
        assert_int_equal(hist[1].traps->signal[fault_signal_index(SIGSEGV)][0], 2);
        store_history_rows_free(hist, n);
        assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, 6 * STORE_RAW_BUCKET_USEC, &hist, &n)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].traps->vector[6], 10);
        assert_int_equal(traps_total(hist[0].traps), 14);
        store_history_rows_free(hist, n);

        /* System-wide: the trapper's traps only (b never trapped); from the second bucket on,
         * half; for uid 1000's processes (none here), nothing. */
        {
                Traps sum;
                uint64_t processes;

                assert_int_equal(IN_SNAPSHOT(s, store_traps(s, t0, -1, 0, &sum, &processes)), 0);
                assert_int_equal(processes, 1);
                assert_int_equal(sum.vector[6], 10);
                assert_int_equal(sum.vector[13], 4);
                assert_int_equal(sum.signal[fault_signal_index(SIGILL)][si_code_slot(2)], 10);
                assert_int_equal(traps_total(&sum), 14);
                assert_int_equal(IN_SNAPSHOT(s, store_traps(s, t0 + 10000000, -1, 0, &sum, &processes)), 0);
                assert_int_equal(traps_total(&sum), 7);
                assert_int_equal(IN_SNAPSHOT(s, store_traps(s, t0, 1000, 0, &sum, &processes)), 0);
                assert_int_equal(processes, 0);
                assert_true(traps_is_zero(&sum));
        }
        store_free(s);
}

/* Top on a reader with ticks the writer has not folded: the pending counts are added, can
 * overtake the tiers' ranks, a process with only pending ticks is found (and counted in
 * otherProcesses), the user and the filter apply to it, traps sort with their pending part, and
 * the answer is the one after the fold. */
static void top_pending_pids(Store *r, const char *sort, size_t limit, int64_t uid, const ProcessFilter *f,
                             const uint32_t *want, const uint64_t *values, size_t n_want, uint64_t other) {
        StoreRow *rows;
        uint64_t left;
        size_t n;

        assert_int_equal(IN_SNAPSHOT(r, store_top(r, 0, sort, limit, uid, f, &rows, &n, &left)), 0);
        assert_int_equal(n, n_want);
        assert_int_equal(left, other);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(rows[i].process.pid, want[i]);
                assert_int_equal(strcmp(sort, "traps") == 0 ? traps_total(&rows[i].traps) : rows[i].faults.user,
                                 values[i]);
        }
        store_rows_free(rows, n);
}

static void test_top_reads_pending(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        ProcessInfo a = { .pid = 830, .start_time = 1, .comm = "a", .uid = 1000, .first_seen_usec = t0 },
                    b = { .pid = 831, .start_time = 1, .comm = "b", .uid = 1000, .first_seen_usec = t0 },
                    c = { .pid = 832, .start_time = 1, .comm = "c", .uid = 2000, .first_seen_usec = t0 };
        ProcessFilter only_c = PROCESS_FILTER_NONE;
        Traps ud = { .vector[6] = 7 };
        char path[256];
        Store *w, *r;

        snprintf(path, sizeof(path), "%s/top-pending.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        /* Folded (the writer folds what is pending when it closes): a 100, b 50. */
        {
                ProcessSample samples[] = { { &a, (Faults) { .user = 100 }, NULL }, { &b, (Faults) { .user = 50 }, NULL } };
                assert_int_equal(store_flush(w, t0, samples, 2), 0);
        }
        store_free(w);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        /* Pending: b 80 more (130, past a), c only pending (90, and 7 traps). */
        {
                ProcessSample samples[] = { { &b, (Faults) { .user = 80 }, NULL }, { &c, (Faults) { .user = 90 }, &ud } };
                assert_int_equal(store_flush(w, t0 + S, samples, 2), 0);
        }
        for (int folded = 0; folded < 2; folded++) {
                top_pending_pids(r, "user", 10, -1, NULL, (uint32_t[]) { 831, 830, 832 }, (uint64_t[]) { 130, 100, 90 },
                                 3, 0);
                top_pending_pids(r, "user", 1, -1, NULL, (uint32_t[]) { 831 }, (uint64_t[]) { 130 }, 1, 2);
                top_pending_pids(r, "user", 10, 2000, NULL, (uint32_t[]) { 832 }, (uint64_t[]) { 90 }, 1, 0);
                top_pending_pids(r, "user", 1, 1000, NULL, (uint32_t[]) { 831 }, (uint64_t[]) { 130 }, 1, 1);
                only_c.comm = (char *) "c";
                top_pending_pids(r, "user", 10, -1, &only_c, (uint32_t[]) { 832 }, (uint64_t[]) { 90 }, 1, 0);
                only_c.comm = NULL;
                /* Ties (a and b have no traps): the newer process row first. */
                top_pending_pids(r, "traps", 10, -1, NULL, (uint32_t[]) { 832, 831, 830 }, (uint64_t[]) { 7, 0, 0 }, 3,
                                 0);
                /* The same answers once the writer folded the pending ticks into the raw tier. */
                store_free(w);
                assert_int_equal(store_open(path, "boot-1", &w), 0);
        }
        store_free(r);
        store_free(w);
}

static void top_filter_pids(Store *s, int64_t uid, const ProcessFilter *f, const uint32_t *want, size_t n_want) {
        StoreRow *rows;
        size_t n;

        assert_int_equal(IN_SNAPSHOT(s, store_top(s, 0, "user", 10, uid, f, &rows, &n, NULL)), 0);
        assert_int_equal(n, n_want);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(rows[i].process.pid, want[i]);
                /* Each its own counts: user faults its pid, a #UD per 10 of them. */
                assert_int_equal(rows[i].faults.user, rows[i].process.pid);
                assert_int_equal(rows[i].traps.vector[6], rows[i].process.pid / 10);
        }
        store_rows_free(rows, n);
}

#define TOP_PIDS(uid, f, ...)                                                                      \
        top_filter_pids(s, uid, f, (const uint32_t[]) { 0, __VA_ARGS__ } + 1,                      \
                        ELEMENTSOF(((const uint32_t[]) { 0, __VA_ARGS__ })) - 1)

/* Top with each filter, and all of them together, under the caller's own uid or not; the
 * traps of the rows it gives. Globs are GLOB's: case-sensitive; no unit matches no glob. */
static void test_top_filters(void **state) {
        ProcessInfo procs[] = {
                { .pid = 10, .start_time = 1, .comm = "postgres", .uid = 0, .unit = (char *) "postgresql.service", .first_seen_usec = 1 },
                { .pid = 21, .start_time = 1, .comm = "postgres", .uid = 1000, .unit = (char *) "postgresql.service", .first_seen_usec = 1 },
                { .pid = 32, .start_time = 1, .comm = "nginx", .uid = 0, .unit = (char *) "nginx.service", .first_seen_usec = 1 },
                { .pid = 43, .start_time = 1, .comm = "python3", .uid = 1000, .first_seen_usec = 1 },
        };
        const uint64_t t0 = 1700000000000000ULL;
        ProcessSample samples[ELEMENTSOF(procs)];
        Traps traps[ELEMENTSOF(procs)] = {};
        ProcessFilter f = PROCESS_FILTER_NONE;
        char path[256], long_glob[STORE_MAX_GLOB + 1];
        Store *s;

        snprintf(path, sizeof(path), "%s/top-filters.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(procs); i++) {
                traps[i].vector[6] = procs[i].pid / 10;
                traps[i].signal[fault_signal_index(SIGILL)][si_code_slot(2)] = procs[i].pid / 10;
                samples[i] = (ProcessSample) { &procs[i], (Faults) { .user = procs[i].pid }, &traps[i] };
        }
        assert_int_equal(store_flush(s, t0, samples, ELEMENTSOF(samples)), 0);

        TOP_PIDS(-1, NULL, 43, 32, 21, 10);
        TOP_PIDS(-1, &f, 43, 32, 21, 10); /* an empty filter */

        assert_int_equal(process_filter_parse_pids(&f, "10,32,99"), 0);
        TOP_PIDS(-1, &f, 32, 10);
        TOP_PIDS(1000, &f); /* both root's */
        TOP_PIDS(0, &f, 32, 10);
        f.n_pids = 0;

        f.uid = 1000;
        TOP_PIDS(-1, &f, 43, 21);
        TOP_PIDS(1000, &f, 43, 21);
        /* A caller who sees only their own asks for another user's: nothing. */
        TOP_PIDS(0, &f);
        f.uid = -1;

        f.unit = strdup("postgresql.service");
        TOP_PIDS(-1, &f, 21, 10);
        TOP_PIDS(1000, &f, 21);
        free(f.unit);
        f.unit = strdup("*");
        TOP_PIDS(-1, &f, 32, 21, 10);
        free(f.unit);
        f.unit = strdup("[n]*.service");
        TOP_PIDS(-1, &f, 32);
        free(f.unit);
        f.unit = NULL;

        f.comm = strdup("post*");
        TOP_PIDS(-1, &f, 21, 10);
        free(f.comm);
        f.comm = strdup("Post*");
        TOP_PIDS(-1, &f);
        free(f.comm);
        f.comm = strdup("[^p]*");
        TOP_PIDS(-1, &f, 32);
        free(f.comm);
        /* In GLOB, unlike fnmatch, ! does not negate: glob_match() (Watch) says the same. */
        f.comm = strdup("[!p]*");
        TOP_PIDS(-1, &f, 43, 21, 10);
        assert_true(glob_match(f.comm, "python3"));
        assert_false(glob_match(f.comm, "nginx"));
        free(f.comm);
        f.comm = strdup("py*");
        TOP_PIDS(-1, &f, 43);
        free(f.comm);

        /* Everything at once: the processes in all of them. */
        f.comm = strdup("p*");
        f.unit = strdup("postgresql.*");
        f.uid = 1000;
        assert_int_equal(process_filter_parse_pids(&f, "10,21,43"), 0);
        TOP_PIDS(-1, &f, 21);
        TOP_PIDS(1000, &f, 21);
        TOP_PIDS(0, &f);
        process_filter_done(&f);

        /* The longest glob a caller may give is not too long for SQLite (its limit is set). */
        memset(long_glob, 'x', STORE_MAX_GLOB - 1);
        long_glob[STORE_MAX_GLOB - 1] = '*';
        long_glob[STORE_MAX_GLOB] = '\0';
        f.unit = strdup(long_glob);
        TOP_PIDS(-1, &f);
        process_filter_done(&f);
        store_free(s);
}

/* Top against a model of what was flushed: 300 processes of three users, counting at random (most
 * ticks nothing, major faults and exec rarely, so that many totals are 0 and many counts tie; a
 * third of them busy only at first) over six buckets, asked after every other tick (some of the
 * window folded, some pending) for every window, four sort keys, four limits from 1 to all, with
 * and without a user. The ranking walks the totals and
 * stops early (store-top.c); the model sums every process. Rows, order, counts and otherProcesses
 * must all agree. */
#define MODEL_PROCS 300
#define MODEL_BUCKETS 6
typedef struct TopModel {
        ProcessInfo procs[MODEL_PROCS];
        char comm[MODEL_PROCS][16];
        Faults counts[MODEL_PROCS][MODEL_BUCKETS];
        bool counted[MODEL_PROCS][MODEL_BUCKETS]; /* a non-zero delta: a row */
} TopModel;

/* Top over buckets since..last by sort, limit and uid, as the store answers and as the model. */
static void top_model_check(Store *s, const TopModel *m, uint64_t t0, size_t since, size_t last, const char *sort,
                            size_t limit, int64_t uid) {
        const FaultField *field = fault_field_by_name(sort);
        struct {
                uint64_t v;
                size_t i;
        } want[MODEL_PROCS];
        size_t n_want = 0, n;
        StoreRow *rows;
        uint64_t other;

        for (size_t i = 0; i < MODEL_PROCS; i++) {
                Faults sum = {};
                bool any = false;
                uint64_t v;
                size_t j;

                if (uid >= 0 && m->procs[i].uid != uid)
                        continue;
                for (size_t x = since; x <= last; x++) {
                        faults_add(&sum, &m->counts[i][x]);
                        any = any || m->counted[i][x];
                }
                if (!any)
                        continue;
                /* In Top's order: the larger first, ties the later process row (the larger pid). */
                v = faults_get(&sum, field);
                for (j = n_want++; j > 0 && (want[j - 1].v < v || (want[j - 1].v == v && want[j - 1].i < i)); j--)
                        want[j] = want[j - 1];
                want[j].v = v;
                want[j].i = i;
        }
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0 + since * 10000000, sort, limit, uid, NULL, &rows, &n, &other)), 0);
        assert_int_equal(n, MIN(limit, n_want));
        assert_int_equal(other, n_want - n);
        for (size_t r = 0; r < n; r++) {
                assert_int_equal(rows[r].process.pid, m->procs[want[r].i].pid);
                assert_int_equal(faults_get(&rows[r].faults, field), want[r].v);
        }
        store_rows_free(rows, n);
}

static void test_top_matches_a_model(void **state) {
        static const char *const sorts[] = { "user", "major", "exec", "kernel", "majorAnon" };
        static const size_t limits[] = { 1, 3, 20, 1000 };
        static const int64_t uids[] = { -1, 1000 };
        static TopModel m;
        ProcessSample samples[MODEL_PROCS];
        const uint64_t t0 = 1700000000000000ULL;
        unsigned seed = 44;
        size_t queries = 0;
        char path[256];
        Store *s;

        snprintf(path, sizeof(path), "%s/top-model.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        /* Process row ids in pid order: the first tick has them all, with nothing counted. */
        for (size_t i = 0; i < MODEL_PROCS; i++) {
                snprintf(m.comm[i], sizeof(m.comm[i]), "p%zu", i);
                m.procs[i] = (ProcessInfo) { .pid = (uint32_t) (1000 + i), .start_time = 1, .uid = 999 + (uint32_t) (i % 3),
                                             .first_seen_usec = t0 };
                memcpy(m.procs[i].comm, m.comm[i], sizeof(m.comm[i]));
                samples[i] = (ProcessSample) { .process = &m.procs[i] };
        }
        assert_int_equal(store_flush(s, t0, samples, MODEL_PROCS), 0);

        for (int tick = 1; tick < MODEL_BUCKETS * 4; tick++) {
                size_t b = (size_t) tick / 4, n = 0;

                for (size_t i = 0; i < MODEL_PROCS; i++) {
                        Faults d = {};

                        if (rand_r(&seed) % 5 != 0)
                                continue;
                        /* A third counts much in the first two buckets and little after: their totals
                         * rank them first, and later windows must walk past them. */
                        d.user = (uint64_t) rand_r(&seed) % 4 + (i % 3 == 0 && b < 2 ? 40 : 0);
                        d.kernel = (uint64_t) rand_r(&seed) % 3;
                        d.major = rand_r(&seed) % 10 == 0 ? 1 + (uint64_t) rand_r(&seed) % 2 : 0;
                        /* Some of them swap-ins, told at their completion. */
                        d.major_anon = d.major > 0 ? (uint64_t) rand_r(&seed) % (d.major + 1) : 0;
                        d.major_file = d.major - d.major_anon;
                        d.exec = rand_r(&seed) % 30 == 0;
                        d.minor = d.user + d.kernel;
                        faults_add(&m.counts[i][b], &d);
                        m.counted[i][b] = m.counted[i][b] || !faults_is_zero(&d);
                        samples[n++] = (ProcessSample) { .process = &m.procs[i], .delta = d };
                }
                assert_int_equal(store_flush(s, t0 + b * 10000000 + (uint64_t) (tick % 4) * 2000000, samples, n), 0);
                /* After the first tick of a bucket (the last bucket just folded, one tick pending)
                 * and after its third (three pending): every other tick, for the qemu legs' sake. */
                if (tick % 2 == 0)
                        continue;
                /* uid 1000's 100 processes ranked alone (by uid), and every fourth tick by the walk
                 * over everyone's totals, as a user with more than top_own_max. */
                store_set_top_own_max(s, tick % 4 == 1 ? 0 : STORE_TOP_OWN_MAX);

                for (size_t since = 0; since <= b; since++)
                        for (size_t k = 0; k < ELEMENTSOF(sorts); k++)
                                for (size_t l = 0; l < ELEMENTSOF(limits); l++)
                                        for (size_t u = 0; u < ELEMENTSOF(uids); u++, queries++)
                                                top_model_check(s, &m, t0, since, b, sorts[k], limits[l], uids[u]);
        }
        assert_true(queries > 1000);
        store_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_flush_top_history),
                cmocka_unit_test(test_traps),
                cmocka_unit_test(test_top_reads_pending),
                cmocka_unit_test(test_top_filters),
                cmocka_unit_test(test_top_matches_a_model),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
