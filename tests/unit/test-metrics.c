/* SPDX-License-Identifier: MIT */
/* The io.systemd.Metrics List replies (daemon/metrics-util.c): the series of a unit, the
 * system-wide ones, the bound and "other". */

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
#include "metrics-util.h"
#include "traps.h"

static const CollectorDrop drops[MANAGER_DROP_KINDS] = {
        { { "fault_map_full", "" }, 5 },  { { "trap_map_full", "" } },   { { "exit_event_lost", "" } },
        { { "exec_event_lost", "" } },    { { "site_map_full", "" } },   { { "site_name_lost", "" } },
        { { "site_process_limit", "" } }, { { "site_user_limit", "" } }, { { "site_reserve", "" } },
        { { "site_lookup_failed", "" } }, { { "symbol_budget", "" } },    { { "tick_merged", "" } },
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
                  .traps = { .vector[6] = 300, .vector[3] = 200 } },
                { .unit = NULL, .processes = 1, .faults = { .user = 1, .read = 1, .minor = 1 } },
        };
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), 1000);

        assert_non_null(list);
        /* 13 system-wide; the totals and a: 2 vectors + 4 page fault kinds + minor + major +
         * processes; none: 3. */
        assert_int_equal(json_array_size(list), 13 + 9 + 9 + 3);
        assert_int_equal(find(list, "io.trapstat.PageFaults", NULL, "access", "read"), 7);
        assert_int_equal(find(list, "io.trapstat.Processes", NULL, NULL, NULL), 3);
        assert_int_equal(find(list, "io.trapstat.Traps", NULL, "vector", "BP"), 200);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "fault_map_full"), 5);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "site_process_limit"), 0);
        assert_int_equal(find(list, "io.trapstat.Drops", NULL, "kind", "symbol_budget"), 0);
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
        /* The user faults' fields name their mode too. */
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(json_array_get(list, 13 + 2), "fields"), "mode")),
                "user");
        /* Too small a bound is a bug of the caller. */
        assert_null(metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), METRICS_MIN_MAX - 1));
}

/* Units of two series each (#UD, processes); the bound 93 leaves 78 for units and "other",
 * after the 13 system-wide series and the system-wide totals (#UD, processes). */
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
        list = metrics_list_build(rows, n_units, drops, ELEMENTSOF(drops), 93);
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
        check_bound(38, 13 + 2 + 76, 38); /* all fit */
        check_bound(39, 93, 39);          /* exactly */
        check_bound(40, 93, 38);          /* 38 and "other" of 2 */
        check_bound(500, 93, 38);
}

/* The totals' own "other" (units beyond --max-unit-totals) is summed into the report's. */
static void test_other_merged(void **state _unused_) {
        UnitTotalsRow rows[] = {
                { .unit = UNIT_TOTALS_OTHER, .processes = 7, .traps.vector[6] = 70 },
                { .unit = "a.service", .processes = 1, .traps.vector[6] = 10 },
        };
        _cleanup_json_ json_t *list = metrics_list_build(rows, ELEMENTSOF(rows), drops, ELEMENTSOF(drops), 93);

        /* 13 system-wide, the totals' 2, a.service's 2, other's 2. */
        assert_int_equal(json_array_size(list), 13 + 2 + 2 + 2);
        assert_int_equal(find(list, "io.trapstat.Traps", NULL, "vector", "UD"), 80);
        assert_int_equal(find(list, "io.trapstat.Processes", NULL, NULL, NULL), 8);
        assert_int_equal(find(list, "io.trapstat.Traps", "other", "vector", "UD"), 70);
        assert_int_equal(find(list, "io.trapstat.Traps", "a.service", "vector", "UD"), 10);
        assert_int_equal(find(list, "io.trapstat.UnitsNotReported", NULL, NULL, NULL), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_series),
                cmocka_unit_test(test_bound),
                cmocka_unit_test(test_other_merged),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
