/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "trap-vectors.h"
#include "traps.h"

/* Every vector 0..31 and "unknown" has a name of its own, and the name leads back to it. */
static void test_vector_names(void **state) {
        const char *names[TRAP_VECTOR_UNKNOWN + 1];
        char bufs[TRAP_VECTOR_UNKNOWN + 1][16];

        for (unsigned v = 0; v <= TRAP_VECTOR_UNKNOWN; v++) {
                unsigned back = 999;

                names[v] = trap_vector_name(v, bufs[v]);
                assert_non_null(names[v]);
                assert_true(names[v][0] != '\0');
                for (unsigned w = 0; w < v; w++)
                        assert_string_not_equal(names[v], names[w]);
                assert_int_equal(trap_vector_from_name(names[v], &back), 0);
                assert_int_equal(back, v);
        }
        assert_string_equal(names[TRAP_VECTOR_UNKNOWN], "unknown");
        assert_null(trap_vector_description(TRAP_VECTOR_UNKNOWN));
}

/* A vector of the table has an upper-case mnemonic and a description; the others are "V<n>"
 * without one. */
static void test_vector_table(void **state) {
        static const struct {
                unsigned number;
                const char *name, *description;
        } table[] = {
#define ENTRY(number, mnemonic, description) { number, #mnemonic, description },
                TRAP_VECTOR_TABLE(ENTRY)
#undef ENTRY
        };
        size_t t = 0;

        assert_int_equal(sizeof(table) / sizeof(table[0]), 20);
        for (unsigned v = 0; v < TRAP_VECTORS; v++) {
                char buf[16], expected[16];
                const char *name = trap_vector_name(v, buf);

                if (t < sizeof(table) / sizeof(table[0]) && table[t].number == v) {
                        assert_string_equal(name, table[t].name);
                        assert_in_range(strlen(name), 2, 3);
                        for (const char *p = name; *p; p++)
                                assert_true(isupper((unsigned char) *p));
                        assert_non_null(trap_vector_description(v));
                        assert_string_equal(trap_vector_description(v), table[t].description);
                        t++;
                } else {
                        snprintf(expected, sizeof(expected), "V%u", v);
                        assert_string_equal(name, expected);
                        assert_null(trap_vector_description(v));
                }
        }
        /* In ascending order, each number once, all below TRAP_VECTORS. */
        assert_int_equal(t, sizeof(table) / sizeof(table[0]));
}

/* The vectors the trap workloads raise and the tests and the IDL name, with the numbers the x86
 * kernel gives them (arch/x86/include/asm/trapnr.h). */
static void test_vector_numbers(void **state) {
        static const struct {
                unsigned number;
                const char *name, *description;
        } known[] = {
                { 0, "DE", "divide error" },      { 1, "DB", "debug" },
                { 3, "BP", "breakpoint" },        { 6, "UD", "invalid opcode" },
                { 13, "GP", "general protection" }, { 14, "PF", "page fault" },
                { 16, "MF", "x87 floating point" }, { 17, "AC", "alignment check" },
                { 19, "XM", "SIMD floating point" },
        };
        unsigned v;

        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
                char buf[16];

                assert_string_equal(trap_vector_name(known[i].number, buf), known[i].name);
                assert_string_equal(trap_vector_description(known[i].number), known[i].description);
                assert_int_equal(trap_vector_from_name(known[i].name, &v), 0);
                assert_int_equal(v, known[i].number);
        }
        assert_int_equal(TRAP_VECTOR_DE, 0);
        assert_int_equal(TRAP_VECTOR_UD, 6);
        assert_int_equal(TRAP_VECTOR_XM, 19);
        assert_int_equal(TRAP_VECTOR_CP, 21);
}

static void test_vector_from_name_unknown(void **state) {
        static const char *const bad[] = { "", "ud", "#UD", "UD ", "V6" /* that is UD */, "V32", "V33",
                                           "V", "unknown2", "SIGILL" };
        unsigned v = 12345;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(trap_vector_from_name(bad[i], &v), -EINVAL);
                assert_int_equal(v, 12345);
        }
        assert_int_equal(trap_vector_from_name("V9", &v), 0);
        assert_int_equal(v, 9);
        assert_int_equal(trap_vector_from_name("unknown", &v), 0);
        assert_int_equal(v, TRAP_VECTOR_UNKNOWN);
}

/* In the order of TS_SIGNALS in bpf/trapstat.h, both ways. */
static void test_fault_signals(void **state) {
        static const int numbers[FAULT_SIGNALS] = { SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV };
        static const char *const names[FAULT_SIGNALS] = { "SIGILL", "SIGTRAP", "SIGBUS", "SIGFPE", "SIGSEGV" };

        for (unsigned i = 0; i < FAULT_SIGNALS; i++) {
                assert_int_equal(fault_signal_number(i), numbers[i]);
                assert_string_equal(fault_signal_name(i), names[i]);
                assert_int_equal(fault_signal_index(numbers[i]), (int) i);
        }
        assert_int_equal(fault_signal_number(FAULT_SIGNALS), -1);
        assert_null(fault_signal_name(FAULT_SIGNALS));
        assert_int_equal(fault_signal_index(SIGKILL), -1);
        assert_int_equal(fault_signal_index(0), -1);
}

static void test_si_codes(void **state) {
        char buf[24];

        for (unsigned slot = 0; slot < SI_CODE_SLOT_OTHER; slot++)
                assert_int_equal(si_code_slot(si_code_of_slot(slot)), (int) slot);
        assert_int_equal(si_code_of_slot(0), 0x80);
        assert_int_equal(si_code_of_slot(SI_CODE_SLOT_OTHER), -1);
        assert_int_equal(si_code_slot(0x80), 0);
        assert_int_equal(si_code_slot(15), SI_CODE_SLOT_OTHER);
        assert_int_equal(si_code_slot(127), SI_CODE_SLOT_OTHER);
        assert_int_equal(si_code_slot(0), SI_CODE_SLOT_OTHER);

        assert_string_equal(si_code_name(SIGSEGV, 1, buf), "SEGV_MAPERR");
        assert_string_equal(si_code_name(SIGSEGV, 2, buf), "SEGV_ACCERR");
        assert_string_equal(si_code_name(SIGILL, 2, buf), "ILL_ILLOPN");
        assert_string_equal(si_code_name(SIGFPE, 1, buf), "FPE_INTDIV");
        assert_string_equal(si_code_name(SIGTRAP, 2, buf), "TRAP_TRACE");
        assert_string_equal(si_code_name(SIGBUS, 1, buf), "BUS_ADRALN");
        assert_string_equal(si_code_name(SIGSEGV, 0x80, buf), "SI_KERNEL");
        assert_string_equal(si_code_name(SIGSEGV, -1, buf), "other");
        assert_string_equal(si_code_name(SIGILL, 14, buf), "CODE14");
}

static void test_traps_to_json(void **state) {
        Traps t = {}, sum = {};
        _cleanup_json_ json_t *o = json_object(), *expected = NULL;

        assert_true(traps_is_zero(&t));
        t.vector[TRAP_VECTOR_UD] = 5;
        t.vector[9] = 1;
        t.vector[TRAP_VECTOR_UNKNOWN] = 2;
        t.signal[fault_signal_index(SIGILL)][si_code_slot(2 /* ILL_ILLOPN */)] = 5;
        t.signal[fault_signal_index(SIGSEGV)][si_code_slot(0x80)] = 3;
        assert_false(traps_is_zero(&t));
        assert_int_equal(traps_total(&t), 8);
        traps_add(&sum, &t);
        traps_add(&sum, &t);
        assert_int_equal(traps_total(&sum), 16);

        assert_non_null(o);
        assert_int_equal(traps_to_json(&t, o), 0);
        expected = json_pack("{s:{s:i, s:i, s:i}, s:{s:i, s:i}, s:{s:i, s:i}}", "traps", "UD", 5, "V9", 1, "unknown", 2,
                             "signals", "SIGILL", 5, "SIGSEGV", 3, "signalCodes", "SIGILL/ILL_ILLOPN", 5,
                             "SIGSEGV/SI_KERNEL", 3);
        assert_non_null(expected);
        assert_true(json_equal(o, expected));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vector_names),
                cmocka_unit_test(test_vector_table),
                cmocka_unit_test(test_vector_numbers),
                cmocka_unit_test(test_vector_from_name_unknown),
                cmocka_unit_test(test_fault_signals),
                cmocka_unit_test(test_si_codes),
                cmocka_unit_test(test_traps_to_json),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
