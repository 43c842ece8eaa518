/* SPDX-License-Identifier: MIT */
/* The io.systemd.Metrics List replies (daemon/systemd-metrics-util.c): the series of a unit, the
 * system-wide ones, the bound and "other"; the families Describe lists. */

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
        { { "site_lookup_failed", "" } }, { { "symbol_budget", "" } },    { { "symbol_unreadable", "" } },
        { { "tick_merged", "" } },
};

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
                  .faults = { .user = 10, .kernel = 1, .read = 6, .write = 3, .exec = 1, .minor = 11, .major = 2 },
                  .fault_time = { .minor_ns = 5000, .major_ns = 2000000, .kernel_ns = 300, .max_ns = 1900000,
                                  .histogram = { [0] = 1, [2] = 10, [11] = 2 } },
                  .traps = { .vector[6] = 300, .vector[3] = 200 } },
                { .unit = NULL, .processes = 1, .faults = { .user = 1, .read = 1, .minor = 1 },
                  .fault_time = { .minor_ns = 700, .max_ns = 700, .histogram[0] = 1 } },
        };
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), 1000);

        assert_non_null(list);
        /* 14 system-wide; the totals and a: 2 vectors + 4 page fault kinds + minor + major + 3
         * kinds of fault time + processes; none: read, minor, minor's time, processes. */
        assert_int_equal(json_array_size(list), 14 + 12 + 12 + 4);
        assert_int_equal(find(list, "io.trapstat.PageFaults", NULL, "access", "read"), 7);
        assert_int_equal(find(list, "io.trapstat.Processes", NULL, NULL, NULL), 3);
        assert_int_equal(find(list, "io.trapstat.Traps", NULL, "vector", "BP"), 200);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "fault_map_full"), 5);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "site_process_limit"), 0);
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
        assert_int_equal(find(list, "io.trapstat.MajorFaults", "a.service", NULL, NULL), 2);
        assert_int_equal(find(list, "io.trapstat.Processes", "a.service", NULL, NULL), 2);
        assert_int_equal(find(list, "io.trapstat.Processes", METRICS_OBJECT_NONE, NULL, NULL), 1);
        assert_int_equal(find(list, "io.trapstat.MajorFaults", METRICS_OBJECT_NONE, NULL, NULL), -1);
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
        /* Only the field kind. */
        json_t *m;
        size_t i;
        json_array_foreach (list, i, m)
                if (strcmp(json_string_value(json_object_get(m, "name")), "io.trapstat.PageFaultTimeNs") == 0) {
                        assert_int_equal(json_object_size(json_object_get(m, "fields")), 1);
                        assert_true(json_is_string(json_object_get(json_object_get(m, "fields"), "kind")));
                }
        /* The user faults' fields name their mode too. */
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(json_array_get(list, 14 + 2), "fields"), "mode")),
                "user");
        /* Too small a bound is a bug of the caller. */
        assert_null(metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), METRICS_MIN_MAX - 1));
}

/* Units of two series each (#UD, processes); the bound 100 leaves 84 for units and "other",
 * after the 14 system-wide series and the system-wide totals (#UD, processes). */
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
        list = metrics_list_build(rows, n_units, drops, ELEMENTSOF(drops), 100);
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
        check_bound(41, 14 + 2 + 82, 41); /* all fit */
        check_bound(42, 100, 42);          /* exactly */
        check_bound(43, 100, 41);          /* 41 and "other" of 2 */
        check_bound(500, 100, 41);
}

/* The totals' own "other" (units beyond --max-unit-totals) is summed into the report's. */
static void test_other_merged(void **state _unused_) {
        UnitTotalsRow rows[] = {
                { .unit = UNIT_TOTALS_OTHER, .processes = 7, .traps.vector[6] = 70, .fault_time.kernel_ns = 40 },
                { .unit = "a.service", .processes = 1, .traps.vector[6] = 10, .fault_time.kernel_ns = 2 },
        };
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), 100);

        /* 14 system-wide, the totals' 3, a.service's 3, other's 3. */
        assert_int_equal(json_array_size(list), 14 + 3 + 3 + 3);
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
 * #UD, processes) make 5 a unit; 100 - 14 - 5 (the totals) = 81 leave room for 15 units and
 * "other" (80: a 16th and "other" would be 85). */
static void test_fault_time_other(void **state _unused_) {
        UnitTotalsRow rows[20];
        char names[20][32];
        uint64_t other_minor = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                snprintf(names[i], sizeof(names[i]), "u%02zu.service", i);
                rows[i] = (UnitTotalsRow) { .unit = names[i], .processes = 1, .traps.vector[6] = 100 - i,
                                            .fault_time = { .minor_ns = 1000 + i, .major_ns = 1, .kernel_ns = 1 } };
        }
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), 100);
        assert_non_null(list);
        assert_int_equal(json_array_size(list), 14 + 5 + 15 * 5 + 5);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 5);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", names[i], "kind", "minor"),
                                 i < 15 ? (json_int_t) (1000 + i) : -1);
                if (i >= 15)
                        other_minor += 1000 + i;
        }
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "other", "kind", "minor"), (json_int_t) other_minor);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", "other", "kind", "major"), 5);
        assert_int_equal(find(list, "io.trapstat.PageFaultTimeNs", NULL, "kind", "major"), 20);
}

/* What Describe lists: every name List can give, once, with a description and a type. */
static void test_families(void **state _unused_) {
        const char *listed[] = { "io.trapstat.Traps", "io.trapstat.PageFaults", "io.trapstat.MinorFaults",
                                 "io.trapstat.MajorFaults", "io.trapstat.PageFaultTimeNs", "io.trapstat.Processes",
                                 "io.trapstat.Drops", "io.trapstat.UnitsNotReported" };

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
        };
        /* Written with x86's trap names, whatever the machine (common/traps.h). */
        trap_arch = TRAP_ARCH_X86;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
