/* SPDX-License-Identifier: MIT */
/* The io.systemd.Metrics List replies (daemon/systemd-metrics-util.c): the series of a unit, the
 * system-wide ones, the bound and "other"; major faults and their time by cause, none where the
 * daemon does not count causes; the kernel's delay accounting (memory stalls by cause, block I/O
 * delays), none where the daemon has none; the families Describe lists. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "systemd-metrics-util.h"
#include "traps.h"

static const CollectorDrop drops[MANAGER_DROP_KINDS] = {
        { { "fault_map_full", "" }, 5 },  { { "trap_map_full", "" } },   { { "exit_event_lost", "" } },
        { { "exec_event_lost", "" } },    { { "site_map_full", "" } },   { { "site_name_lost", "" } },
        { { "site_process_limit", "" } }, { { "site_user_limit", "" } }, { { "site_reserve", "" } },
        { { "site_lookup_failed", "" } }, { { "major_cause_untold", "" } }, { { "symbol_budget", "" } },
        { { "symbol_unreadable", "" } },  { { "tick_merged", "" } },
};
/* The numbers below: 15 system-wide series (14 drop kinds, units not reported), an object at most
 * 59 series (33 vectors, 4 page fault kinds, minor, major, 3 causes, 3 kinds of fault time, 3
 * causes' time, 4 memory stall causes' time and 4 their waits, block I/O's time and waits,
 * processes), so the smallest bound 15 + 2 * 59. */
_Static_assert(METRICS_SYSTEM_SERIES == 15, "the counts below have 15 system-wide series");
_Static_assert(METRICS_MAX_SERIES_PER_OBJECT == 59, "an object has at most 59 series");
_Static_assert(METRICS_MIN_MAX == 133, "the bounds below are 133");

/* The value of the metric name with object and (when not NULL) field = value; -1 when absent. */
static json_int_t find(json_t *list, const char *name, const char *object, const char *field, const char *value) {
        json_t *m;
        size_t i;

        json_array_foreach (list, i, m) {
                const char *o = json_string_value(json_object_get(m, "object"));

                if (strcmp(json_string_value(json_object_get(m, "name")), name) != 0)
                        continue;
                if (object ? !o || strcmp(o, object) != 0 : o != NULL)
                        continue;
                if (field && strcmp(json_string_value(json_object_get(json_object_get(m, "fields"), field)) ?: "", value) != 0)
                        continue;
                return json_integer_value(json_object_get(m, "value"));
        }
        return -1;
}

static void test_series(void **state _unused_) {
        UnitTotalsRow rows[] = {
                { .unit = "a.service", .processes = 2,
                  .faults = { .user = 10, .kernel = 1, .read = 6, .write = 3, .exec = 1, .minor = 11, .major = 3,
                              .major_file = 1, .major_shmem = 1 },
                  .fault_time = { .minor_ns = 5000, .major_ns = 2000000, .kernel_ns = 300, .max_ns = 1900000,
                                  .histogram = { [0] = 1, [2] = 10, [11] = 2 }, .major_file_ns = 1900000 },
                  .traps = { .vector[6] = 300, .vector[3] = 200 } },
                { .unit = NULL, .processes = 1, .faults = { .user = 1, .read = 1, .minor = 1 },
                  .fault_time = { .minor_ns = 700, .max_ns = 700, .histogram[0] = 1 } },
        };
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops),
                                                         FAULTS_KNOWN_ALL, 1000);

        assert_non_null(list);
        /* 15 system-wide; the totals and a: 2 vectors + 4 page fault kinds + minor + major + 2
         * causes (anon is 0) + 3 kinds of fault time + file's time + processes; none: read,
         * minor, minor's time, processes. */
        assert_int_equal(json_array_size(list), 15 + 15 + 15 + 4);
        assert_int_equal(find(list, "io.trapstat.PageFaults", NULL, "access", "read"), 7);
        assert_int_equal(find(list, "io.trapstat.Processes", NULL, NULL, NULL), 3);
        assert_int_equal(find(list, "io.trapstat.Traps", NULL, "vector", "BP"), 200);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "fault_map_full"), 5);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "site_process_limit"), 0);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "major_cause_untold"), 0);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "symbol_budget"), 0);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "symbol_unreadable"), 0);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "tick_merged"), 0);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 0);
        assert_int_equal(find(list, "io.trapstat.Traps", "a.service", "vector", "UD"), 300);
        assert_int_equal(find(list, "io.trapstat.Traps", "a.service", "vector", "BP"), 200);
        assert_int_equal(find(list, "io.trapstat.Traps", "a.service", "vector", "GP"), -1);
        assert_int_equal(find(list, "io.trapstat.PageFaults", "a.service", "access", "read"), 6);
        assert_int_equal(find(list, "io.trapstat.PageFaults", "a.service", "access", "write"), 3);
        assert_int_equal(find(list, "io.trapstat.PageFaults", "a.service", "access", "exec"), 1);
        assert_int_equal(find(list, "io.trapstat.PageFaults", "a.service", "mode", "kernel"), 1);
        assert_int_equal(find(list, "io.trapstat.MinorFaults", "a.service", NULL, NULL), 11);
        assert_int_equal(find(list, "io.trapstat.MajorFaults", "a.service", NULL, NULL), 3);
        assert_int_equal(find(list, "io.trapstat.Processes", "a.service", NULL, NULL), 2);
        assert_int_equal(find(list, "io.trapstat.Processes", METRICS_OBJECT_NONE, NULL, NULL), 1);
        assert_int_equal(find(list, "io.trapstat.MajorFaults", METRICS_OBJECT_NONE, NULL, NULL), -1);
        /* Major faults by cause, a cause at zero not listed: one of the three was of none told. */
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", "a.service", "cause", "file"), 1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", "a.service", "cause", "anon"), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", "a.service", "cause", "shmem"), 1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", NULL, "cause", "file"), 1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", METRICS_OBJECT_NONE, NULL, NULL), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultTimeNsByCause", "a.service", "cause", "file"), 1900000);
        assert_int_equal(find(list, "io.trapstat.MajorFaultTimeNsByCause", "a.service", "cause", "shmem"), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultTimeNsByCause", NULL, "cause", "file"), 1900000);
        /* Fault time in nanoseconds by kind, as UnitTotals has it; none's major and kernel are
         * zero, so not listed; the system-wide ones are the sums. */
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "a.service", "kind", "minor"), 5000);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "a.service", "kind", "major"), 2000000);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "a.service", "kind", "kernel"), 300);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", METRICS_OBJECT_NONE, "kind", "minor"), 700);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", METRICS_OBJECT_NONE, "kind", "major"), -1);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", METRICS_OBJECT_NONE, "kind", "kernel"), -1);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", NULL, "kind", "minor"), 5700);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", NULL, "kind", "major"), 2000000);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", NULL, "kind", "kernel"), 300);
        /* Only the field kind in the time's, only cause in the causes'. */
        json_t *m;
        size_t i;
        json_array_foreach (list, i, m) {
                const char *name = json_string_value(json_object_get(m, "name"));
                const char *field = strcmp(name, "io.trapstat.PageFaultTimeNs") == 0 ? "kind"
                                    : strstr(name, "ByCause")                        ? "cause"
                                                                                     : NULL;
                if (!field)
                        continue;
                assert_int_equal(json_object_size(json_object_get(m, "fields")), 1);
                assert_true(json_is_string(json_object_get(json_object_get(m, "fields"), field)));
        }
        /* The user faults' fields name their mode too. */
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(json_array_get(list, 15 + 2), "fields"), "mode")),
                "user");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(json_array_get(list, 15 + 2), "fields"), "access")),
                "read");
        /* Too small a bound is a bug of the caller. */
        assert_null(metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), FAULTS_KNOWN_ALL,
                                       METRICS_MIN_MAX - 1));
}

/* What the daemon does not count has no series (not a zero, not a value of the rows either):
 * without the major causes (Linux before 5.17, --disable-source major_cause), without the access
 * kind (arm64), or a row that says its causes are not known. */
static void test_parts_not_counted(void **state _unused_) {
        UnitTotalsRow rows[] = {
                { .unit = "a.service", .processes = 1,
                  .faults = { .user = 4, .read = 4, .minor = 3, .major = 1, .major_anon = 1 },
                  .fault_time = { .major_ns = 800, .major_anon_ns = 800 } },
        };
        json_t *list = metrics_list_build(rows, 1, drops, ELEMENTSOF(drops), FAULTS_KNOWN_ACCESS, METRICS_MIN_MAX);

        /* 15 system-wide; the totals and a: read, minor, major, major's time, processes. */
        assert_int_equal(json_array_size(list), 15 + 5 + 5);
        assert_int_equal(find(list, "io.trapstat.MajorFaults", "a.service", NULL, NULL), 1);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "a.service", "kind", "major"), 800);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", "a.service", NULL, NULL), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", NULL, NULL, NULL), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultTimeNsByCause", "a.service", NULL, NULL), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultTimeNsByCause", NULL, NULL, NULL), -1);
        json_decref(list);

        /* Causes counted, the access kind not: no user faults by access. */
        list = metrics_list_build(rows, 1, drops, ELEMENTSOF(drops), FAULTS_KNOWN_MAJOR_CAUSE, METRICS_MIN_MAX);
        assert_int_equal(json_array_size(list), 15 + 6 + 6);
        assert_int_equal(find(list, "io.trapstat.PageFaults", "a.service", NULL, NULL), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", "a.service", "cause", "anon"), 1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultTimeNsByCause", "a.service", "cause", "anon"), 800);
        assert_int_equal(find(list, "io.trapstat.MajorFaultTimeNsByCause", NULL, "cause", "anon"), 800);
        json_decref(list);

        /* The daemon counts both, the row says its causes are not known: none of them, in the
         * totals neither (a sum with an unknown part is unknown). */
        rows[0].faults.unknown = FAULTS_KNOWN_MAJOR_CAUSE;
        list = metrics_list_build(rows, 1, drops, ELEMENTSOF(drops), FAULTS_KNOWN_ALL, METRICS_MIN_MAX);
        assert_int_equal(json_array_size(list), 15 + 5 + 5);
        assert_int_equal(find(list, "io.trapstat.PageFaults", "a.service", "access", "read"), 4);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", NULL, NULL, NULL), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultTimeNsByCause", NULL, NULL, NULL), -1);
        json_decref(list);
}

/* Units of two series each (#UD, processes); the bound 133 leaves 116 for units and "other",
 * after the 15 system-wide series and the system-wide totals (#UD, processes). */
static void check_bound(size_t n_units, size_t expect_replies, size_t expect_reported) {
        _cleanup_free_ UnitTotalsRow *rows = calloc(n_units + 1, sizeof(*rows));
        char (*names)[32] = calloc(n_units + 1, 32);
        _cleanup_json_ json_t *list = NULL;
        uint64_t other_ud = 0, other_processes = 0;

        for (size_t i = 0; i < n_units; i++) {
                snprintf(names[i], 32, "u%02zu.service", i);
                /* Most events first, as unit_totals_query() gives them. */
                rows[i] = (UnitTotalsRow) { .unit = names[i], .processes = 1, .traps.vector[6] = 1000 - i };
                if (i >= expect_reported) {
                        other_ud += 1000 - i;
                        other_processes++;
                }
        }
        list = metrics_list_build(rows, n_units, drops, ELEMENTSOF(drops), FAULTS_KNOWN_ALL, 133);
        assert_non_null(list);
        assert_int_equal(json_array_size(list), expect_replies);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), n_units - expect_reported);
        /* The system-wide totals hold every unit, reported or not. */
        assert_int_equal(find(list, "io.trapstat.Processes", NULL, NULL, NULL), (json_int_t) n_units);
        assert_int_equal(find(list, "io.trapstat.Traps", NULL, "vector", "UD"),
                         (json_int_t) (1000 * n_units - n_units * (n_units - 1) / 2));
        for (size_t i = 0; i < n_units; i++)
                assert_int_equal(find(list, "io.trapstat.Traps", names[i], "vector", "UD"),
                                 i < expect_reported ? (json_int_t) (1000 - i) : -1);
        assert_int_equal(find(list, "io.trapstat.Traps", METRICS_OBJECT_OTHER, "vector", "UD"),
                         other_processes ? (json_int_t) other_ud : -1);
        assert_int_equal(find(list, "io.trapstat.Processes", METRICS_OBJECT_OTHER, NULL, NULL),
                         other_processes ? (json_int_t) other_processes : -1);
        free(names);
}

static void test_bound(void **state _unused_) {
        check_bound(57, 15 + 2 + 114, 57); /* all fit */
        check_bound(58, 133, 58);           /* exactly */
        check_bound(59, 133, 57);           /* 57 and "other" of 2 */
        check_bound(500, 133, 57);
}

/* The totals' own "other" (units beyond --max-unit-totals) is summed into the report's. */
static void test_other_merged(void **state _unused_) {
        UnitTotalsRow rows[] = {
                { .unit = UNIT_TOTALS_OTHER, .processes = 7, .traps.vector[6] = 70, .fault_time.kernel_ns = 40 },
                { .unit = "a.service", .processes = 1, .traps.vector[6] = 10, .fault_time.kernel_ns = 2 },
        };
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops),
                                                         FAULTS_KNOWN_ALL, 133);

        /* 15 system-wide, the totals' 3, a.service's 3, other's 3. */
        assert_int_equal(json_array_size(list), 15 + 3 + 3 + 3);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", NULL, "kind", "kernel"), 42);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "other", "kind", "kernel"), 40);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "a.service", "kind", "kernel"), 2);
        assert_int_equal(find(list, "io.trapstat.Traps", NULL, "vector", "UD"), 80);
        assert_int_equal(find(list, "io.trapstat.Processes", NULL, NULL, NULL), 8);
        assert_int_equal(find(list, "io.trapstat.Traps", "other", "vector", "UD"), 70);
        assert_int_equal(find(list, "io.trapstat.Traps", "a.service", "vector", "UD"), 10);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 0);
}

/* A unit's fault time, summed into "other" with it when it does not fit: 3 series of time (and
 * #UD, processes) make 5 a unit; 133 - 15 - 5 (the totals) = 113 leave room for 21 units and
 * "other" (110: a 22nd and "other" would be 115). */
static void test_fault_time_other(void **state _unused_) {
        UnitTotalsRow rows[25];
        char names[25][32];
        uint64_t other_minor = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                snprintf(names[i], sizeof(names[i]), "u%02zu.service", i);
                rows[i] = (UnitTotalsRow) { .unit = names[i], .processes = 1, .traps.vector[6] = 100 - i,
                                            .fault_time = { .minor_ns = 1000 + i, .major_ns = 1, .kernel_ns = 1 } };
        }
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops),
                                                         FAULTS_KNOWN_ALL, 133);
        assert_non_null(list);
        assert_int_equal(json_array_size(list), 15 + 5 + 21 * 5 + 5);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 4);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", names[i], "kind", "minor"),
                                 i < 21 ? (json_int_t) (1000 + i) : -1);
                if (i >= 21)
                        other_minor += 1000 + i;
        }
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "other", "kind", "minor"), (json_int_t) other_minor);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "other", "kind", "major"), 4);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", NULL, "kind", "major"), 25);
}

/* The causes count against the bound like every series, and only where the daemon counts them:
 * 30 units of #UD, major, a cause and processes (4 series) leave room for 27 and "other" in 133
 * (15 system-wide, the totals 4: 27 * 4 + 4 = 112 of 114); without the causes, 3 series each, all
 * 30 fit (90 of 115). "other" sums the causes of the units left out. */
static void test_major_cause_other(void **state _unused_) {
        UnitTotalsRow rows[30];
        char names[30][32];
        json_t *list;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                snprintf(names[i], sizeof(names[i]), "u%02zu.service", i);
                rows[i] = (UnitTotalsRow) { .unit = names[i], .processes = 1, .traps.vector[6] = 100 - i,
                                            .faults = { .major = 1, .major_anon = 1 } };
        }
        list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), FAULTS_KNOWN_ALL, 133);
        assert_int_equal(json_array_size(list), 15 + 4 + 27 * 4 + 4);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 3);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", names[26], "cause", "anon"), 1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", names[27], "cause", "anon"), -1);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", "other", "cause", "anon"), 3);
        assert_int_equal(find(list, "io.trapstat.MajorFaults", "other", NULL, NULL), 3);
        assert_int_equal(find(list, "io.trapstat.MajorFaultsByCause", NULL, "cause", "anon"), 30);
        json_decref(list);

        list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), FAULTS_KNOWN_ACCESS, 133);
        assert_int_equal(json_array_size(list), 15 + 3 + 30 * 3);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 0);
        assert_int_equal(find(list, "io.trapstat.MajorFaults", names[29], NULL, NULL), 1);
        json_decref(list);
}

/* The number of metrics named name in list (any object). */
static size_t count_named(json_t *list, const char *name) {
        size_t i, n = 0;
        json_t *m;

        json_array_foreach (list, i, m)
                n += strcmp(json_string_value(json_object_get(m, "name")), name) == 0;
        return n;
}

/* The kernel's delay accounting per unit, exactly as UnitTotalsRow.stall has it: memory by cause
 * (field cause only), block I/O with no fields; a cause at zero not listed; the system-wide
 * series the sums. */
static void test_stall(void **state _unused_) {
        UnitTotalsRow rows[] = {
                { .unit = "a.service", .processes = 1, .faults = { .user = 1, .read = 1 },
                  .stall = { .ns = { [STALL_SWAPIN] = 1500000000, [STALL_RECLAIM] = 2000, [STALL_COMPACT] = 30,
                                     [STALL_BLKIO] = 7000000 },
                             .count = { [STALL_SWAPIN] = 3, [STALL_RECLAIM] = 1, [STALL_COMPACT] = 2,
                                        [STALL_BLKIO] = 4 } } },
                { .unit = NULL, .processes = 1,
                  .stall = { .ns = { [STALL_THRASHING] = 900, [STALL_BLKIO] = 100 },
                             .count = { [STALL_THRASHING] = 1, [STALL_BLKIO] = 1 } } },
        };
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops),
                                                         FAULTS_KNOWN_ALL, 1000);
        json_t *m;
        size_t i;

        /* 15 system-wide; the totals: read, 4 causes' time and waits, block I/O's two, processes;
         * a: read, 3 causes' time and waits, block I/O's two, processes; none: thrashing's two,
         * block I/O's two, processes. */
        assert_int_equal(json_array_size(list), 15 + 12 + 10 + 5);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", "a.service", "cause", "swapin"), 1500000000);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", "a.service", "cause", "thrashing"), -1);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", "a.service", "cause", "reclaim"), 2000);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", "a.service", "cause", "compact"), 30);
        assert_int_equal(find(list, "io.trapstat.MemoryStalls", "a.service", "cause", "swapin"), 3);
        assert_int_equal(find(list, "io.trapstat.MemoryStalls", "a.service", "cause", "reclaim"), 1);
        assert_int_equal(find(list, "io.trapstat.MemoryStalls", "a.service", "cause", "compact"), 2);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelayNs", "a.service", NULL, NULL), 7000000);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelays", "a.service", NULL, NULL), 4);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", METRICS_OBJECT_NONE, "cause", "thrashing"), 900);
        assert_int_equal(find(list, "io.trapstat.MemoryStalls", METRICS_OBJECT_NONE, "cause", "thrashing"), 1);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", METRICS_OBJECT_NONE, "cause", "swapin"), -1);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelayNs", METRICS_OBJECT_NONE, NULL, NULL), 100);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", NULL, "cause", "swapin"), 1500000000);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", NULL, "cause", "thrashing"), 900);
        assert_int_equal(find(list, "io.trapstat.MemoryStalls", NULL, "cause", "compact"), 2);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelayNs", NULL, NULL, NULL), 7000100);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelays", NULL, NULL, NULL), 5);
        /* Block I/O is not a cause of the memory ones. */
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", NULL, "cause", "blkio"), -1);
        json_array_foreach (list, i, m) {
                const char *name = json_string_value(json_object_get(m, "name"));
                json_t *fields = json_object_get(m, "fields");

                if (strncmp(name, "io.trapstat.MemoryStall", 23) == 0) {
                        assert_int_equal(json_object_size(fields), 1);
                        assert_true(json_is_string(json_object_get(fields, "cause")));
                } else if (strncmp(name, "io.trapstat.BlockIo", 19) == 0)
                        assert_null(fields);
        }
}

/* The causes' names are the IDL's (stall_cause_names[]), in its order, and every one of Stall but
 * blkio has a memory metric; the bound counts the stall's series as any others. */
static void test_stall_names(void **state _unused_) {
        UnitTotalsRow row = { .unit = "a.service" };
        json_t *m;
        size_t i, k = 0;

        for (size_t c = 0; c < _STALL_MAX; c++)
                row.stall.ns[c] = row.stall.count[c] = c + 1;
        _cleanup_json_ json_t *list = metrics_list_build(&row, 1, drops, ELEMENTSOF(drops), FAULTS_KNOWN_ALL,
                                                         METRICS_MIN_MAX);
        /* 15 system-wide; the totals and a: 4 + 4 + 2. */
        assert_int_equal(json_array_size(list), 15 + 10 + 10);
        json_array_foreach (list, i, m)
                if (!json_object_get(m, "object") &&
                    strcmp(json_string_value(json_object_get(m, "name")), "io.trapstat.MemoryStallNs") == 0) {
                        assert_true(k < STALL_BLKIO);
                        assert_string_equal(json_string_value(json_object_get(json_object_get(m, "fields"), "cause")),
                                            stall_cause_names[k]);
                        assert_int_equal(json_integer_value(json_object_get(m, "value")), k + 1);
                        k++;
                }
        assert_int_equal(k, STALL_BLKIO);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelayNs", "a.service", NULL, NULL), STALL_BLKIO + 1);
}

/* Without the kernel's delay accounting (FaultsKnown without FAULTS_KNOWN_STALL) there is no stall
 * metric at all, though the rows hold numbers (as they would were it turned off since). */
static void test_stall_not_known(void **state _unused_) {
        UnitTotalsRow rows[] = {
                { .unit = "a.service", .processes = 1,
                  .stall = { .ns = { [STALL_SWAPIN] = 5, [STALL_BLKIO] = 6 }, .count = { [STALL_SWAPIN] = 1,
                                                                                    [STALL_BLKIO] = 1 } } },
        };
        json_t *list = metrics_list_build(rows, 1, drops, ELEMENTSOF(drops),
                                          FAULTS_KNOWN_ACCESS | FAULTS_KNOWN_MAJOR_CAUSE, METRICS_MIN_MAX);

        /* 15 system-wide; the totals and a: processes. */
        assert_int_equal(json_array_size(list), 15 + 1 + 1);
        assert_int_equal(count_named(list, "io.trapstat.MemoryStallNs"), 0);
        assert_int_equal(count_named(list, "io.trapstat.MemoryStalls"), 0);
        assert_int_equal(count_named(list, "io.trapstat.BlockIoDelayNs"), 0);
        assert_int_equal(count_named(list, "io.trapstat.BlockIoDelays"), 0);
        json_decref(list);

        /* Known: all four. */
        list = metrics_list_build(rows, 1, drops, ELEMENTSOF(drops), FAULTS_KNOWN_ALL, METRICS_MIN_MAX);
        assert_int_equal(json_array_size(list), 15 + 5 + 5);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", "a.service", "cause", "swapin"), 5);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelays", "a.service", NULL, NULL), 1);
        json_decref(list);
}

/* The stall's series count against the bound and go into "other" with their unit: 30 units of
 * #UD, processes, swapin's time and waits, block I/O's time and waits (6 series) leave room for
 * 17 and "other" in 133 (15 system-wide, the totals 6: 17 * 6 + 6 = 108 of 112); without the
 * stall, 2 series each, all 30 fit (60 of 116). */
static void test_stall_other(void **state _unused_) {
        UnitTotalsRow rows[30];
        char names[30][32];
        json_t *list;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                snprintf(names[i], sizeof(names[i]), "u%02zu.service", i);
                rows[i] = (UnitTotalsRow) { .unit = names[i], .processes = 1, .traps.vector[6] = 100 - i,
                                            .stall = { .ns = { [STALL_SWAPIN] = 1000 + i, [STALL_BLKIO] = 10 },
                                                       .count = { [STALL_SWAPIN] = 1, [STALL_BLKIO] = 2 } } };
        }
        list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), FAULTS_KNOWN_ALL, 133);
        assert_int_equal(json_array_size(list), 15 + 6 + 17 * 6 + 6);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 13);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", names[16], "cause", "swapin"), 1016);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", names[17], "cause", "swapin"), -1);
        /* other: units 17 to 29, 13 of them. */
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", "other", "cause", "swapin"), 13 * 1000 + (17 + 29) * 13 / 2);
        assert_int_equal(find(list, "io.trapstat.MemoryStalls", "other", "cause", "swapin"), 13);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelayNs", "other", NULL, NULL), 130);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelays", "other", NULL, NULL), 26);
        assert_int_equal(find(list, "io.trapstat.MemoryStallNs", NULL, "cause", "swapin"), 30 * 1000 + 29 * 30 / 2);
        assert_int_equal(find(list, "io.trapstat.BlockIoDelays", NULL, NULL, NULL), 60);
        json_decref(list);

        list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), FAULTS_KNOWN_MAJOR_CAUSE, 133);
        assert_int_equal(json_array_size(list), 15 + 2 + 30 * 2);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 0);
        assert_int_equal(count_named(list, "io.trapstat.MemoryStallNs"), 0);
        json_decref(list);
}

/* What Describe lists: every name List can give, once, with a description and a type. */
static void test_families(void **state _unused_) {
        const char *listed[] = { "io.trapstat.Traps",
                                 "io.trapstat.PageFaults",
                                 "io.trapstat.MinorFaults",
                                 "io.trapstat.MajorFaults",
                                 "io.trapstat.MajorFaultsByCause",
                                 "io.trapstat.PageFaultTimeNs",
                                 "io.trapstat.MajorFaultTimeNsByCause",
                                 "io.trapstat.MemoryStallNs",
                                 "io.trapstat.MemoryStalls",
                                 "io.trapstat.BlockIoDelayNs",
                                 "io.trapstat.BlockIoDelays",
                                 "io.trapstat.Processes",
                                 "io.trapstat.Drops",
                                 "io.trapstat.UnitsNotReported" };

        assert_int_equal(n_metric_families, ELEMENTSOF(listed));
        for (size_t i = 0; i < ELEMENTSOF(listed); i++) {
                assert_string_equal(metric_families[i].name, listed[i]);
                assert_true(strlen(metric_families[i].description) > 0);
                assert_string_equal(metric_families[i].type,
                                    strcmp(listed[i], "io.trapstat.UnitsNotReported") == 0 ? "gauge" : "counter");
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_series),
                cmocka_unit_test(test_fault_time_other),
                cmocka_unit_test(test_families),
                cmocka_unit_test(test_bound),
                cmocka_unit_test(test_other_merged),
                cmocka_unit_test(test_parts_not_counted),
                cmocka_unit_test(test_major_cause_other),
                cmocka_unit_test(test_stall),
                cmocka_unit_test(test_stall_names),
                cmocka_unit_test(test_stall_not_known),
                cmocka_unit_test(test_stall_other),
        };
        /* Written with x86's trap names, whatever the machine (common/traps.h). */
        trap_arch = TRAP_ARCH_X86;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
