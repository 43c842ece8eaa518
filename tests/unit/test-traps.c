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
#include "sites.h"
#include "trap-vectors.h"
#include "traps.h"

/* On every architecture each slot 0..31 and "unknown" has a name of its own, and the name leads
 * back to it; trap_arch's is the one trap_vector_name() uses. */
static void test_vector_names(void **state) {
        static const TrapArch arches[] = { TRAP_ARCH_X86, TRAP_ARCH_ARM64, TRAP_ARCH_OTHER };

        for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); a++) {
                const char *names[TRAP_VECTOR_UNKNOWN + 1];
                char bufs[TRAP_VECTOR_UNKNOWN + 1][16];

                for (unsigned v = 0; v <= TRAP_VECTOR_UNKNOWN; v++) {
                        unsigned back = 999;

                        names[v] = trap_vector_name_of(arches[a], v, bufs[v]);
                        assert_non_null(names[v]);
                        assert_true(names[v][0] != '\0');
                        for (unsigned w = 0; w < v; w++)
                                assert_string_not_equal(names[v], names[w]);
                        assert_int_equal(trap_vector_from_name_of(arches[a], names[v], &back), 0);
                        assert_int_equal(back, v);
                }
                assert_string_equal(names[TRAP_VECTOR_UNKNOWN], "unknown");
                assert_null(trap_vector_description_of(arches[a], TRAP_VECTOR_UNKNOWN));
                if (arches[a] == TRAP_ARCH_OTHER)
                        assert_string_equal(names[6], "V6");
        }
        for (unsigned v = 0; v <= TRAP_VECTOR_UNKNOWN; v++) {
                char a[16], b[16];

                assert_string_equal(trap_vector_name(v, a), trap_vector_name_of(trap_arch, v, b));
        }
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
                const char *name = trap_vector_name_of(TRAP_ARCH_X86, v, buf);

                if (t < sizeof(table) / sizeof(table[0]) && table[t].number == v) {
                        assert_string_equal(name, table[t].name);
                        assert_true(strlen(name) == 2 || strlen(name) == 3);
                        for (const char *p = name; *p; p++)
                                assert_true(isupper((unsigned char) *p));
                        assert_non_null(trap_vector_description_of(TRAP_ARCH_X86, v));
                        assert_string_equal(trap_vector_description_of(TRAP_ARCH_X86, v), table[t].description);
                        t++;
                } else {
                        snprintf(expected, sizeof(expected), "V%u", v);
                        assert_string_equal(name, expected);
                        assert_null(trap_vector_description_of(TRAP_ARCH_X86, v));
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

                assert_string_equal(trap_vector_name_of(TRAP_ARCH_X86, known[i].number, buf), known[i].name);
                assert_string_equal(trap_vector_description_of(TRAP_ARCH_X86, known[i].number), known[i].description);
                assert_int_equal(trap_vector_from_name_of(TRAP_ARCH_X86, known[i].name, &v), 0);
                assert_int_equal(v, known[i].number);
        }
        assert_int_equal(TRAP_VECTOR_DE, 0);
        assert_int_equal(TRAP_VECTOR_UD, 6);
        assert_int_equal(TRAP_VECTOR_XM, 19);
        assert_int_equal(TRAP_VECTOR_CP, 21);
}

/* arm64: every class of the table at a slot 0..31 of its own, in ascending order of class, each
 * class once; the classes the trap workloads raise and the IDL names carry the numbers of the
 * architecture (ESR_ELx.EC) and the kernel's names for them (arch/arm64/include/asm/esr.h). */
static void test_arm64_classes(void **state) {
        static const struct {
                unsigned slot, class;
                const char *name, *description;
        } table[] = {
#define ENTRY(slot, class, mnemonic, description) { slot, class, #mnemonic, description },
                TRAP_ARM64_CLASS_TABLE(ENTRY)
#undef ENTRY
        };
        static const struct {
                unsigned class;
                const char *name;
        } known[] = {
                { 0x00, "UNKNOWN" },  { 0x0E, "ILL" },         { 0x18, "SYS64" },       { 0x20, "IABT_LOW" },
                { 0x22, "PC_ALIGN" }, { 0x24, "DABT_LOW" },    { 0x26, "SP_ALIGN" },    { 0x2C, "FP_EXC64" },
                { 0x30, "BREAKPT_LOW" }, { 0x32, "SOFTSTP_LOW" }, { 0x34, "WATCHPT_LOW" }, { 0x3C, "BRK64" },
        };
        char buf[16];

        assert_int_equal(sizeof(table) / sizeof(table[0]), TRAP_VECTORS);
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                assert_int_equal(table[i].slot, i);
                assert_true(table[i].class < 64);
                if (i > 0)
                        assert_true(table[i].class > table[i - 1].class);
                assert_string_equal(trap_vector_name_of(TRAP_ARCH_ARM64, table[i].slot, buf), table[i].name);
                assert_string_equal(trap_vector_description_of(TRAP_ARCH_ARM64, table[i].slot), table[i].description);
        }
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
                size_t j = 0;

                while (j < sizeof(table) / sizeof(table[0]) && table[j].class != known[i].class)
                        j++;
                assert_true(j < sizeof(table) / sizeof(table[0]));
                assert_string_equal(table[j].name, known[i].name);
        }
        assert_int_equal(TRAP_ARM64_BRK64, 31);
        assert_int_equal(TRAP_ARM64_UNKNOWN, 0);
}

static void test_vector_from_name_unknown(void **state) {
        static const char *const bad[] = { "", "ud", "#UD", "UD ", "V6" /* that is UD */, "V32", "V33",
                                           "V", "unknown2", "SIGILL" };
        unsigned v = 12345;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(trap_vector_from_name_of(TRAP_ARCH_X86, bad[i], &v), -EINVAL);
                assert_int_equal(v, 12345);
        }
        assert_int_equal(trap_vector_from_name_of(TRAP_ARCH_X86, "V9", &v), 0);
        assert_int_equal(v, 9);
        assert_int_equal(trap_vector_from_name_of(TRAP_ARCH_ARM64, "UD", &v), -EINVAL);
        assert_int_equal(trap_vector_from_name_of(TRAP_ARCH_X86, "BRK64", &v), -EINVAL);
        assert_int_equal(trap_vector_from_name_of(TRAP_ARCH_ARM64, "BRK64", &v), 0);
        assert_int_equal(v, TRAP_ARM64_BRK64);
        assert_int_equal(trap_vector_from_name_of(TRAP_ARCH_X86, "unknown", &v), 0);
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

/* ---- Site: the JSON of a SiteCount ---- */

/* A trap with a symbol, and a sampled fault in file-backed memory. */
static SiteCount trap_site(void) {
        return (SiteCount) { .kind = SITE_TRAP, .vector = TRAP_VECTOR_UD, .period = 1,
                             .object = (char *) "/usr/lib/x/libfoo.so", .dev = 2049, .ino = 77, .offset = 0x1234,
                             .symbol = (char *) "foo_init", .symbol_offset = 0x14, .memory = MEMORY_NONE, .count = 37 };
}

static SiteCount fault_site(void) {
        return (SiteCount) { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64,
                             .object = (char *) "/usr/bin/app", .offset = 0x2a00, .memory = MEMORY_FILE,
                             .memory_object = (char *) "/var/lib/app/data.bin", .count = 100, .time_ns = 250000 };
}

/* Every major fault at its instruction: exact, timed, its memory a shared memory file. */
static SiteCount major_site(void) {
        return (SiteCount) { .kind = SITE_MAJOR, .vector = SITE_FAULT_VECTOR, .period = 1,
                             .object = (char *) "/usr/bin/app", .offset = 0x2a10, .symbol = (char *) "read_pages",
                             .symbol_offset = 0x10, .memory = MEMORY_FILE,
                             .memory_object = (char *) "/memfd:swap-in (deleted)", .count = 2048,
                             .time_ns = 90000000 };
}

static void assert_members(json_t *j, const char *const *names, size_t n) {
        assert_int_equal(json_object_size(j), n);
        for (size_t i = 0; i < n; i++)
                if (!json_object_get(j, names[i]))
                        fail_msg("member %s missing", names[i]);
}

/* Every member of the IDL's Site, by its exact name, and nothing else; nulls where the IDL
 * says. */
/* The text written without json_t is what json_dumps() makes of counters_to_json(). */
static void test_counters_format_json(void **state) {
        const uint64_t values[] = { 0, 1, 42, 1000000007, (uint64_t) INT64_MAX, (uint64_t) INT64_MAX + 1, UINT64_MAX };
        char buf[COUNTERS_JSON_MAX];
        Traps none = {}, some = { .vector[6] = 1 };
        Stall stall = {};

        for (size_t k = 0; k < ELEMENTSOF(values); k++) {
                Faults f = {};
                FaultTime t = { .minor_ns = values[k], .major_ns = values[(k + 1) % ELEMENTSOF(values)],
                                .kernel_ns = values[(k + 2) % ELEMENTSOF(values)],
                                .max_ns = values[(k + 3) % ELEMENTSOF(values)] };

                for (size_t i = 0; i < n_fault_fields; i++)
                        *faults_field(&f, &fault_fields[i]) = values[(k + i) % ELEMENTSOF(values)];
                for (size_t i = 0; i < FAULT_TIME_BUCKETS; i++)
                        t.histogram[i] = values[(k + i) % ELEMENTSOF(values)];
                for (size_t i = 0; i < _STALL_MAX; i++) {
                        stall.ns[i] = values[(k + 2 * i) % ELEMENTSOF(values)];
                        stall.count[i] = values[(k + 2 * i + 1) % ELEMENTSOF(values)];
                }
                _cleanup_json_ json_t *j = counters_to_json(&f, &t, &stall, &none, FAULTS_KNOWN_ALL);
                _cleanup_free_ char *dumped = json_dumps(j, JSON_COMPACT);
                int n = counters_format_json(&f, &t, &stall, &none, FAULTS_KNOWN_ALL, buf);
                Stall back;

                assert_non_null(dumped);
                assert_int_equal(n, (int) strlen(dumped));
                assert_string_equal(buf, dumped);
                /* Stall parses back, clamped as every count is. */
                assert_int_equal(stall_from_json(json_object_get(j, "stall"), &back), 0);
                for (size_t i = 0; i < _STALL_MAX; i++) {
                        assert_true(back.ns[i] == MIN(stall.ns[i], (uint64_t) INT64_MAX));
                        assert_true(back.count[i] == MIN(stall.count[i], (uint64_t) INT64_MAX));
                }
        }
        assert_int_equal(counters_format_json(&(Faults) {}, &(FaultTime) {}, &(Stall) {}, &some, FAULTS_KNOWN_ALL, buf),
                         -EINVAL);
        (void) state;
}

/* The member of fault_fields[i] in the JSON of a Faults: in its group's object when it has one;
 * NULL when missing, or when the group is null (then *group_null). */
static json_t *faults_member(json_t *faults, size_t i, bool *group_null) {
        json_t *parent = fault_fields[i].group ? json_object_get(faults, fault_fields[i].group) : faults;

        *group_null = json_is_null(parent);
        return json_object_get(parent, fault_fields[i].member);
}

/* Where a part is not counted (the daemon's fault events do not tell the access kind, or its
 * kernel cannot look up a major fault's mapping, or a reply said so), its members are null (the
 * access members each, majorByCause as a whole), both formatters alike, and parse back as not
 * known; sums keep it; the others stay numbers. */
static void test_faults_unknown_parts(void **state) {
        Faults f = { .user = 7, .kernel = 1, .minor = 8, .major = 6, .read = 3, .major_file = 4, .major_shmem = 1 },
               back, sum = {};
        Stall stall = { .ns = { 3000000, 0, 17, 0, 900 }, .count = { 2048, 0, 1, 0, 3 } };
        char buf[COUNTERS_JSON_MAX];

        for (FaultsKnown known = 0; known <= FAULTS_KNOWN_ALL; known++) {
                _cleanup_json_ json_t *j = counters_to_json(&f, &(FaultTime) {}, &stall, &(Traps) {}, known);
                _cleanup_free_ char *dumped = json_dumps(j, JSON_COMPACT);
                json_t *faults = json_object_get(j, "faults");
                Stall stall_back;

                assert_int_equal(counters_format_json(&f, &(FaultTime) {}, &stall, &(Traps) {}, known, buf),
                                 (int) strlen(dumped));
                assert_string_equal(buf, dumped);
                /* The kernel's delay accounting: null while it keeps none, never zeros. */
                assert_int_equal(json_is_null(json_object_get(j, "stall")), !(known & FAULTS_KNOWN_STALL));
                if (known & FAULTS_KNOWN_STALL) {
                        assert_int_equal(stall_from_json(json_object_get(j, "stall"), &stall_back), 0);
                        assert_memory_equal(&stall_back, &stall, sizeof(stall_back));
                }
                assert_int_equal(json_is_null(json_object_get(faults, "majorByCause")),
                                 !(known & FAULTS_KNOWN_MAJOR_CAUSE));
                for (size_t i = 0; i < n_fault_fields; i++) {
                        bool group_null;
                        json_t *v = faults_member(faults, i, &group_null);
                        bool counted = !fault_fields[i].part || (known & fault_fields[i].part);

                        if (!counted && fault_fields[i].group)
                                assert_true(group_null);
                        else if (!counted)
                                assert_true(json_is_null(v));
                        else
                                assert_int_equal(json_integer_value(v), faults_get(&f, &fault_fields[i]));
                }
                assert_int_equal(faults_from_json(faults, &back), 0);
                assert_int_equal(back.unknown, (FAULTS_KNOWN_ACCESS | FAULTS_KNOWN_MAJOR_CAUSE) & ~known);
                assert_int_equal(back.user, 7);
                assert_int_equal(back.read, known & FAULTS_KNOWN_ACCESS ? 3 : 0);
                assert_int_equal(back.major_file, known & FAULTS_KNOWN_MAJOR_CAUSE ? 4 : 0);
        }
        /* Null or missing only for the parts that may be unknown: a null or missing user, a
         * group with a member missing, or a member not known are malformed. */
        {
                static const char *const bad[] = {
                        "{\"user\":null,\"kernel\":0,\"minor\":0,\"major\":0,\"read\":0,\"write\":0,\"exec\":0,"
                        "\"protection\":0,\"majorByCause\":null}",
                        "{\"kernel\":0,\"minor\":0,\"major\":0,\"read\":0,\"write\":0,\"exec\":0,"
                        "\"protection\":0}",
                        "{\"user\":0,\"kernel\":0,\"minor\":0,\"major\":0,\"read\":0,\"write\":0,\"exec\":0,"
                        "\"protection\":0,\"majorByCause\":{\"file\":1,\"anon\":2}}",
                        "{\"user\":0,\"kernel\":0,\"minor\":0,\"major\":0,\"read\":0,\"write\":0,\"exec\":0,"
                        "\"protection\":0,\"majorByCause\":{\"file\":1,\"anon\":2,\"shmem\":-1}}",
                        "{\"user\":0,\"kernel\":0,\"minor\":0,\"major\":0,\"read\":0,\"write\":0,\"exec\":0,"
                        "\"protection\":0,\"majorByCause\":{\"file\":1,\"anon\":2,\"shmem\":0,\"swap\":1}}",
                        "{\"user\":0,\"kernel\":0,\"minor\":0,\"major\":0,\"read\":0,\"write\":0,\"exec\":0,"
                        "\"protection\":0,\"majorByCause\":7}",
                        "{\"user\":0,\"kernel\":0,\"minor\":0,\"major\":0,\"read\":0,\"write\":0,\"exec\":0,"
                        "\"protection\":0,\"file\":1,\"anon\":2,\"shmem\":0}",
                        "{\"user\":0,\"kernel\":0,\"minor\":0,\"major\":0,\"read\":0,\"write\":0,\"exec\":0,"
                        "\"protection\":0,\"majorByCause\":{\"file\":1,\"anon\":2,\"majorByCause\":{}}}",
                };

                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        _cleanup_json_ json_t *j = json_loads(bad[i], 0, NULL);

                        assert_non_null(j);
                        assert_int_equal(faults_from_json(j, &back), -EBADMSG);
                }
        }
        /* From a daemon that does not count a part: its members missing, not counted. */
        {
                _cleanup_json_ json_t *j = json_loads("{\"user\":1,\"kernel\":0,\"minor\":0,\"major\":0}", 0, NULL);

                assert_int_equal(faults_from_json(j, &back), 0);
                assert_int_equal(back.unknown, FAULTS_KNOWN_ACCESS | FAULTS_KNOWN_MAJOR_CAUSE);
                assert_int_equal(back.user, 1);
        }
        /* A sum with one unknown part is unknown, and written so. */
        back = f;
        back.unknown = FAULTS_KNOWN_ACCESS;
        faults_add(&sum, &f);
        assert_int_equal(sum.unknown, 0);
        faults_add(&sum, &back);
        assert_int_equal(sum.unknown, FAULTS_KNOWN_ACCESS);
        {
                _cleanup_json_ json_t *j = faults_to_json(&sum, FAULTS_KNOWN_ALL);

                assert_true(json_is_null(json_object_get(j, "protection")));
                assert_int_equal(json_integer_value(json_object_get(j, "user")), 14);
                assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "majorByCause"), "file")), 8);
        }
        (void) state;
}

static void test_site_to_json(void **state) {
        static const char *const members[] = { "kind",  "vector",  "object",    "offset", "symbol", "symbolOffset",
                                               "count", "sampled", "period",    "estimated", "memory",
                                               "memoryObject", "timeNs", "estimatedTimeNs" };
        SiteCount t = trap_site(), f = fault_site(), m = major_site();
        _cleanup_json_ json_t *tj = site_count_to_json(&t), *fj = site_count_to_json(&f), *mj = site_count_to_json(&m);
        _cleanup_json_ json_t *texp = NULL, *fexp = NULL, *mexp = NULL;

        assert_non_null(tj);
        assert_non_null(fj);
        assert_non_null(mj);
        assert_members(tj, members, sizeof(members) / sizeof(members[0]));
        assert_members(fj, members, sizeof(members) / sizeof(members[0]));
        assert_members(mj, members, sizeof(members) / sizeof(members[0]));

        texp = json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:b, s:i, s:i, s:s, s:n, s:i, s:i}", "kind", "trap", "vector",
                         "UD", "object", "/usr/lib/x/libfoo.so", "offset", 0x1234, "symbol", "foo_init", "symbolOffset",
                         0x14, "count", 37, "sampled", 0, "period", 1, "estimated", 37, "memory", "none", "memoryObject",
                         "timeNs", 0, "estimatedTimeNs", 0);
        /* The sampled faults' time, and the estimate of all of the site's: 64 times it. */
        fexp = json_pack("{s:s, s:s, s:s, s:i, s:n, s:n, s:i, s:b, s:i, s:i, s:s, s:s, s:i, s:i}", "kind", "fault", "vector",
                         "PF", "object", "/usr/bin/app", "offset", 0x2a00, "symbol", "symbolOffset", "count", 100,
                         "sampled", 1, "period", 64, "estimated", 6400, "memory", "file", "memoryObject",
                         "/var/lib/app/data.bin", "timeNs", 250000, "estimatedTimeNs", 16000000);
        /* Major faults: every one, "PF", their time exact. */
        mexp = json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:b, s:i, s:i, s:s, s:s, s:i, s:i}", "kind", "major", "vector",
                         "PF", "object", "/usr/bin/app", "offset", 0x2a10, "symbol", "read_pages", "symbolOffset", 0x10,
                         "count", 2048, "sampled", 0, "period", 1, "estimated", 2048, "memory", "file", "memoryObject",
                         "/memfd:swap-in (deleted)", "timeNs", 90000000, "estimatedTimeNs", 90000000);
        assert_non_null(texp);
        assert_non_null(fexp);
        assert_non_null(mexp);
        assert_true(json_equal(tj, texp));
        assert_true(json_equal(fj, fexp));
        assert_true(json_equal(mj, mexp));
}

/* A memory object is named only for memory "file"; a site without an object says "[unknown]";
 * an unknown vector is "unknown"; kinds out of range give no JSON. */
static void test_site_to_json_edges(void **state) {
        SiteCount s = fault_site();
        json_t *j;

        s.memory = MEMORY_HEAP; /* memory_object left set: not a file, so not served */
        s.object = NULL;
        j = site_count_to_json(&s);
        assert_non_null(j);
        assert_true(json_is_null(json_object_get(j, "memoryObject")));
        assert_string_equal(json_string_value(json_object_get(j, "memory")), "heap");
        assert_string_equal(json_string_value(json_object_get(j, "object")), "[unknown]");
        json_decref(j);

        s = trap_site();
        s.vector = TRAP_VECTOR_UNKNOWN;
        j = site_count_to_json(&s);
        assert_string_equal(json_string_value(json_object_get(j, "vector")), "unknown");
        json_decref(j);

        s.kind = _SITE_KIND_MAX;
        assert_null(site_count_to_json(&s));
        s = trap_site();
        s.memory = _MEMORY_KIND_MAX;
        assert_null(site_count_to_json(&s));
}

/* Integers stay JSON integers: counts beyond 2^63 - 1 and the estimate of a count times a period
 * that overflows are clamped to it, and still read back. Text that is not UTF-8 becomes U+FFFD. */
static void test_site_to_json_clamped(void **state) {
        SiteCount s = fault_site(), back;
        json_t *j;

        s.count = UINT64_C(1) << 62;
        j = site_count_to_json(&s);
        assert_true(json_is_integer(json_object_get(j, "count")));
        assert_int_equal(json_integer_value(json_object_get(j, "count")), INT64_C(1) << 62);
        assert_int_equal(json_integer_value(json_object_get(j, "estimated")), INT64_MAX);
        assert_int_equal(site_count_from_json(j, &back), 0);
        assert_int_equal(back.count, UINT64_C(1) << 62);
        site_count_done(&back);
        json_decref(j);

        s.count = UINT64_MAX;
        s.offset = UINT64_MAX;
        s.object = (char *) "/opt/\xff.so";
        j = site_count_to_json(&s);
        assert_int_equal(json_integer_value(json_object_get(j, "count")), INT64_MAX);
        assert_int_equal(json_integer_value(json_object_get(j, "offset")), INT64_MAX);
        assert_int_equal(json_integer_value(json_object_get(j, "estimated")), INT64_MAX);
        assert_string_equal(json_string_value(json_object_get(j, "object")), "/opt/\xef\xbf\xbd.so");
        json_decref(j);
}

static void assert_site_equal(const SiteCount *a, const SiteCount *b) {
        assert_int_equal(a->kind, b->kind);
        assert_int_equal(a->vector, b->vector);
        assert_int_equal(a->period, b->period);
        assert_string_equal(a->object, b->object);
        assert_int_equal(a->offset, b->offset);
        if (a->symbol || b->symbol) {
                assert_non_null(a->symbol);
                assert_non_null(b->symbol);
                assert_string_equal(a->symbol, b->symbol);
                assert_int_equal(a->symbol_offset, b->symbol_offset);
        }
        assert_int_equal(a->memory, b->memory);
        if (a->memory_object || b->memory_object) {
                assert_non_null(a->memory_object);
                assert_non_null(b->memory_object);
                assert_string_equal(a->memory_object, b->memory_object);
        }
        assert_int_equal(a->count, b->count);
}

/* to_json then from_json gives the site back (but dev and inode, which JSON does not carry). */
static void test_site_round_trip(void **state) {
        SiteCount sites[] = { trap_site(), fault_site(), trap_site(), major_site(), major_site() };

        sites[2].vector = TRAP_VECTOR_UNKNOWN;
        sites[2].symbol = NULL;
        sites[2].memory = MEMORY_UNMAPPED;
        sites[4].memory = MEMORY_ANON;
        sites[4].memory_object = NULL;
        sites[4].time_ns = 0;
        for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
                _cleanup_json_ json_t *j = site_count_to_json(&sites[i]);
                SiteCount back = { .dev = 1 };

                assert_non_null(j);
                assert_int_equal(site_count_from_json(j, &back), 0);
                assert_site_equal(&back, &sites[i]);
                assert_int_equal(back.dev, 0);
                assert_int_equal(back.ino, 0);
                assert_int_equal(site_count_estimated(&back), site_count_estimated(&sites[i]));
                assert_int_equal(back.time_ns, sites[i].time_ns);
                site_count_done(&back);
        }
}

/* Nullable members may also be absent, as varlink allows. */
static void test_site_from_json_absent_nulls(void **state) {
        _cleanup_json_ json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:i, s:i, s:s}", "kind", "trap", "vector",
                                             "GP", "object", "[anon]", "offset", 4096, "count", 2, "sampled", 0,
                                             "period", 1, "estimated", 2, "memory", "none");
        SiteCount s;

        assert_int_equal(site_count_from_json(j, &s), 0);
        assert_int_equal(s.vector, TRAP_VECTOR_GP);
        assert_null(s.symbol);
        assert_null(s.memory_object);
        assert_string_equal(s.object, "[anon]");
        site_count_done(&s);
}

/* Strict: each way a reply can break the IDL's Site is refused, and *ret is left alone. */
static void test_site_from_json_strict(void **state) {
        static const struct {
                const char *member, *json; /* member replaced by json; json NULL: removed */
        } bad[] = {
                { "kind", NULL },
                { "kind", "\"Trap\"" },
                { "vector", "\"XX\"" },
                { "vector", "6" },
                { "object", "null" },
                { "offset", "-1" },
                { "offset", "1.5" },
                { "count", "\"37\"" },
                { "count", "-37" },
                { "count", NULL },
                { "sampled", "true" },   /* a trap is never sampled */
                { "sampled", "1" },
                { "period", "0" },
                { "period", "2" },       /* traps: 1 */
                { "estimated", "38" },   /* count × period */
                { "memory", "\"brk\"" },
                { "memoryObject", "\"/x\"" }, /* memory is "none" */
                { "symbol", "null" },    /* symbolOffset without symbol */
                { "symbol", "7" },
                { "symbolOffset", "null" }, /* symbol without symbolOffset */
                { "symbolOffset", "-2" },
                { "extra", "1" },
        };
        SiteCount t = trap_site();
        SiteCount untouched = { .count = 4242 };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_json_ json_t *j = site_count_to_json(&t);
                SiteCount s = untouched;

                if (bad[i].json)
                        json_object_set_new(j, bad[i].member, json_loads(bad[i].json, JSON_DECODE_ANY, NULL));
                else
                        json_object_del(j, bad[i].member);
                if (site_count_from_json(j, &s) != -EBADMSG)
                        fail_msg("accepted %s = %s", bad[i].member, bad[i].json ?: "(absent)");
                assert_int_equal(s.count, 4242);
        }

        /* Fault sites: sampled, "PF" only, any period. */
        {
                SiteCount f = fault_site();
                _cleanup_json_ json_t *j = site_count_to_json(&f);
                SiteCount s;

                json_object_set_new(j, "vector", json_string("UD"));
                assert_int_equal(site_count_from_json(j, &s), -EBADMSG);
                json_object_set_new(j, "vector", json_string("PF"));
                json_object_set_new(j, "sampled", json_false());
                assert_int_equal(site_count_from_json(j, &s), -EBADMSG);
                json_object_set_new(j, "sampled", json_true());
                assert_int_equal(site_count_from_json(j, &s), 0);
                site_count_done(&s);
        }
        /* Major sites: "PF" only, never sampled, period 1, estimated = count. */
        {
                static const struct {
                        const char *member, *json;
                } bad_major[] = {
                        { "vector", "\"UD\"" }, { "sampled", "true" }, { "period", "64" }, { "estimated", "131072" },
                        { "kind", "\"majors\"" },
                };
                SiteCount m = major_site();

                for (size_t i = 0; i < sizeof(bad_major) / sizeof(bad_major[0]); i++) {
                        _cleanup_json_ json_t *j = site_count_to_json(&m);
                        SiteCount s = untouched;

                        json_object_set_new(j, bad_major[i].member, json_loads(bad_major[i].json, JSON_DECODE_ANY, NULL));
                        if (site_count_from_json(j, &s) != -EBADMSG)
                                fail_msg("accepted a major site's %s = %s", bad_major[i].member, bad_major[i].json);
                        assert_int_equal(s.count, 4242);
                }
        }
        assert_int_equal(site_count_from_json(NULL, &t), -EBADMSG);
        {
                _cleanup_json_ json_t *a = json_array();
                assert_int_equal(site_count_from_json(a, &t), -EBADMSG);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vector_names),
                cmocka_unit_test(test_vector_table),
                cmocka_unit_test(test_vector_numbers),
                cmocka_unit_test(test_arm64_classes),
                cmocka_unit_test(test_faults_unknown_parts),
                cmocka_unit_test(test_vector_from_name_unknown),
                cmocka_unit_test(test_fault_signals),
                cmocka_unit_test(test_si_codes),
                cmocka_unit_test(test_traps_to_json),
                cmocka_unit_test(test_counters_format_json),
                cmocka_unit_test(test_site_to_json),
                cmocka_unit_test(test_site_to_json_edges),
                cmocka_unit_test(test_site_to_json_clamped),
                cmocka_unit_test(test_site_round_trip),
                cmocka_unit_test(test_site_from_json_absent_nulls),
                cmocka_unit_test(test_site_from_json_strict),
        };
        /* Written with x86's trap names, whatever the machine (common/traps.h). */
        trap_arch = TRAP_ARCH_X86;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
