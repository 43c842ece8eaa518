/* SPDX-License-Identifier: MIT */
/* Running totals per unit (daemon/unit-totals.c): monotonic across process exit, processes
 * counted once, the per-uid view, the bound on units and UnitTotals' limit and otherUnits. */

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
#include "traps.h"
#include "unit-totals.h"

static const Traps ud3 = { .vector[6] = 3 };
static const Traps bp2 = { .vector[3] = 2 };

static const UnitTotalsRow *row_of(const UnitTotalsRow *rows, size_t n, const char *unit) {
        for (size_t i = 0; i < n; i++)
                if (unit ? rows[i].unit && strcmp(rows[i].unit, unit) == 0 : !rows[i].unit)
                        return &rows[i];
        return NULL;
}

static void test_monotonic(void **state _unused_) {
        ProcessInfo a = { .pid = 10, .start_time = 1, .uid = 0, .unit = (char *) "a.service" };
        ProcessInfo b = { .pid = 11, .start_time = 1, .uid = 1000, .unit = (char *) "a.service" };
        ProcessInfo c = { .pid = 12, .start_time = 1, .uid = 1000 }; /* in no unit */
        UnitTotals *t;
        UnitTotalsRow *rows;
        const UnitTotalsRow *r;
        size_t n;

        assert_int_equal(unit_totals_new(10, &t), 0);
        for (int tick = 0; tick < 3; tick++) {
                ProcessSample s[] = {
                        { &a, (Faults) { .user = 5, .minor = 5 }, &ud3 },
                        { &b, (Faults) { .user = 1 }, &bp2 },
                        { &c, (Faults) { .kernel = 4 } },
                };
                assert_int_equal(unit_totals_add(t, s, ELEMENTSOF(s)), 0);
        }
        /* a exits, with a last count; then nothing of it again, its totals stay. */
        a.exited = true;
        assert_int_equal(unit_totals_add(t, (ProcessSample[]) { { &a, (Faults) { .user = 1 } } }, 1), 0);
        /* The same pid, a new process (another start time): counted anew. */
        ProcessInfo a2 = { .pid = 10, .start_time = 2, .uid = 0, .unit = (char *) "a.service", .exited = true };
        assert_int_equal(unit_totals_add(t, (ProcessSample[]) { { &a2, {}, &ud3 } }, 1), 0);

        assert_int_equal(unit_totals_query(t, -1, &rows, &n), 0);
        assert_int_equal(n, 2);
        /* a.service: a's 16 and b's 3 user faults + 12 #UD + 6 #BP = 37 events, before no unit's 12. */
        assert_string_equal(rows[0].unit, "a.service");
        assert_int_equal(rows[0].processes, 3);
        assert_int_equal(rows[0].faults.user, 19);
        assert_int_equal(rows[0].faults.minor, 15);
        assert_int_equal(rows[0].traps.vector[6], 12);
        assert_int_equal(rows[0].traps.vector[3], 6);
        assert_int_equal(unit_totals_row_events(&rows[0]), 37);
        assert_null(rows[1].unit);
        assert_int_equal(rows[1].processes, 1);
        assert_int_equal(rows[1].faults.kernel, 12);
        free(rows);

        /* uid 1000 sees its own: b's share of a.service and c. */
        assert_int_equal(unit_totals_query(t, 1000, &rows, &n), 0);
        assert_int_equal(n, 2);
        r = row_of(rows, n, "a.service");
        assert_non_null(r);
        assert_int_equal(r->processes, 1);
        assert_int_equal(r->faults.user, 3);
        assert_int_equal(r->traps.vector[3], 6);
        assert_int_equal(r->traps.vector[6], 0);
        free(rows);
        /* uid 0: a and a2 only. */
        assert_int_equal(unit_totals_query(t, 0, &rows, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].processes, 2);
        assert_int_equal(rows[0].traps.vector[6], 12);
        free(rows);
        /* Someone with nothing sees nothing. */
        assert_int_equal(unit_totals_query(t, 4242, &rows, &n), 0);
        assert_int_equal(n, 0);
        free(rows);
        unit_totals_free(t);
}

/* A process that moves into another unit (a service manager's child before its exec) counts in
 * both; seen again in the same unit, it does not count again. */
static void test_moved(void **state _unused_) {
        ProcessInfo p = { .pid = 7, .start_time = 9, .uid = 0, .unit = (char *) "manager.service" };
        UnitTotals *t;
        UnitTotalsRow *rows;
        size_t n;

        assert_int_equal(unit_totals_new(10, &t), 0);
        assert_int_equal(unit_totals_add(t, (ProcessSample[]) { { &p, (Faults) { .user = 1 } } }, 1), 0);
        p.unit = (char *) "child.service";
        for (int i = 0; i < 3; i++)
                assert_int_equal(unit_totals_add(t, (ProcessSample[]) { { &p, (Faults) { .user = 2 } } }, 1), 0);
        assert_int_equal(unit_totals_query(t, -1, &rows, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(rows[0].unit, "child.service");
        assert_int_equal(rows[0].processes, 1);
        assert_int_equal(rows[0].faults.user, 6);
        assert_string_equal(rows[1].unit, "manager.service");
        assert_int_equal(rows[1].processes, 1);
        free(rows);
        unit_totals_free(t);
}

/* 5000 units, 1000 kept: the first 1000 by arrival, the others summed into "other" for good,
 * also when they count again later; every sum exact. */
static void test_bound(void **state _unused_) {
        enum { UNITS = 5000, KEPT = 1000 };
        static char names[UNITS][32];
        static ProcessInfo procs[UNITS];
        static ProcessSample samples[UNITS];
        UnitTotals *t;
        UnitTotalsRow *rows;
        const UnitTotalsRow *r;
        size_t n;

        assert_int_equal(unit_totals_new(KEPT, &t), 0);
        for (int round = 0; round < 2; round++) {
                for (int i = 0; i < UNITS; i++) {
                        snprintf(names[i], sizeof(names[i]), "u%d.service", i);
                        procs[i] = (ProcessInfo) { .pid = (uint32_t) i + 1, .start_time = 1, .unit = names[i],
                                                   .uid = (uint32_t) (i % 2) };
                        /* Unit i counts i + 1 user faults a round. */
                        samples[i] = (ProcessSample) { &procs[i], (Faults) { .user = (uint64_t) i + 1 } };
                }
                assert_int_equal(unit_totals_add(t, samples, UNITS), 0);
        }
        assert_true(unit_totals_overflowed(t));

        assert_int_equal(unit_totals_query(t, -1, &rows, &n), 0);
        /* The units kept, and "other". */
        assert_int_equal(n, KEPT + 1);
        /* other: units 1000..4999, 2 * sum(1001..5000) faults, 4000 processes. */
        r = row_of(rows, n, UNIT_TOTALS_OTHER);
        assert_non_null(r);
        assert_int_equal(r->processes, UNITS - KEPT);
        assert_int_equal(r->faults.user, 2 * ((uint64_t) UNITS * (UNITS + 1) / 2 - (uint64_t) KEPT * (KEPT + 1) / 2));
        assert_ptr_equal(r, &rows[0]);
        for (int i = 0; i < KEPT; i++) {
                r = row_of(rows, n, names[i]);
                assert_non_null(r);
                assert_int_equal(r->faults.user, 2 * ((uint64_t) i + 1));
                assert_int_equal(r->processes, 1);
        }
        /* Most first, so the kept ones go from u999 down to u0. */
        assert_string_equal(rows[1].unit, "u999.service");
        assert_string_equal(rows[KEPT].unit, "u0.service");
        assert_null(row_of(rows, n, "u1000.service"));
        free(rows);

        /* uid 1: the odd units; "other" holds its share only. */
        assert_int_equal(unit_totals_query(t, 1, &rows, &n), 0);
        assert_int_equal(n, KEPT / 2 + 1);
        r = row_of(rows, n, UNIT_TOTALS_OTHER);
        assert_int_equal(r->processes, (UNITS - KEPT) / 2);
        free(rows);
        unit_totals_free(t);

        assert_int_equal(unit_totals_new(0, &t), -EINVAL);
}

/* UnitTotals' reply: limit, otherUnits, total over every unit, ties by name. */
static void test_reply(void **state _unused_) {
        ProcessInfo p[] = {
                { .pid = 1, .start_time = 1, .uid = 0, .unit = (char *) "b.service" },
                { .pid = 2, .start_time = 1, .uid = 0, .unit = (char *) "a.service" },
                { .pid = 3, .start_time = 1, .uid = 0, .unit = (char *) "c.service" },
                { .pid = 4, .start_time = 1, .uid = 0 },
        };
        ProcessSample s[] = {
                { &p[0], (Faults) { .user = 3 } },
                { &p[1], (Faults) { .user = 3 } },
                { &p[2], {}, &ud3 },
                { &p[3], (Faults) { .kernel = 1 } },
        };
        _cleanup_json_ json_t *reply = NULL;
        UnitTotals *t;
        json_t *units;

        assert_int_equal(unit_totals_new(10, &t), 0);
        assert_int_equal(unit_totals_add(t, s, ELEMENTSOF(s)), 0);

        reply = unit_totals_reply_build(t, -1, 2, 12345, FAULTS_KNOWN_ALL);
        assert_non_null(reply);
        assert_int_equal(json_integer_value(json_object_get(reply, "sinceUsec")), 12345);
        assert_int_equal(json_integer_value(json_object_get(reply, "otherUnits")), 2);
        units = json_object_get(reply, "units");
        assert_int_equal(json_array_size(units), 2);
        /* Three events each: a before b before c by name. */
        assert_string_equal(json_string_value(json_object_get(json_array_get(units, 0), "unit")), "a.service");
        assert_string_equal(json_string_value(json_object_get(json_array_get(units, 1), "unit")), "b.service");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(units, 1), "processes")), 1);
        assert_int_equal(json_integer_value(json_object_get(
                                 json_object_get(json_object_get(json_array_get(units, 0), "counters"), "faults"), "user")),
                         3);
        /* total: all four units, also those left out. */
        json_t *total = json_object_get(reply, "total");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(total, "faults"), "user")), 6);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(total, "faults"), "kernel")), 1);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(total, "traps"), "UD")), 3);
        json_decref(TAKE_PTR(reply));

        /* Room for all: none left out; the unit-less row's unit is null. */
        reply = unit_totals_reply_build(t, -1, 100, 0, FAULTS_KNOWN_ALL);
        assert_int_equal(json_integer_value(json_object_get(reply, "otherUnits")), 0);
        units = json_object_get(reply, "units");
        assert_int_equal(json_array_size(units), 4);
        assert_true(json_is_null(json_object_get(json_array_get(units, 3), "unit")));
        json_decref(TAKE_PTR(reply));

        /* A user with nothing: an empty list and zero totals. */
        reply = unit_totals_reply_build(t, 1000, 100, 0, FAULTS_KNOWN_ALL);
        assert_int_equal(json_array_size(json_object_get(reply, "units")), 0);
        assert_int_equal(json_integer_value(json_object_get(reply, "otherUnits")), 0);
        unit_totals_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_monotonic),
                cmocka_unit_test(test_moved),
                cmocka_unit_test(test_bound),
                cmocka_unit_test(test_reply),
        };
        /* Written with x86's trap names, whatever the machine (common/traps.h). */
        trap_arch = TRAP_ARCH_X86;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
