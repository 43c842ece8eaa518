/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "filter.h"
#include "macro.h"

/* GLOB's rules: * ? [...] [^...], case-sensitive, a backslash is an ordinary character. */
static void test_glob(void **state) {
        assert_true(glob_match("nginx.service", "nginx.service"));
        assert_false(glob_match("nginx.service", "nginx.servicex"));
        assert_true(glob_match("user@*.service", "user@1000.service"));
        assert_false(glob_match("user@*.service", "user-1000.slice"));
        assert_true(glob_match("post?res", "postgres"));
        assert_false(glob_match("Postgres", "postgres"));
        assert_true(glob_match("[a-c]x", "bx"));
        assert_true(glob_match("[^a-c]x", "dx"));
        assert_false(glob_match("[^a-c]x", "ax"));
        assert_true(glob_match("a\\x2db.service", "a\\x2db.service"));
        assert_false(glob_match("a\\*", "a*"));
        assert_true(glob_match("*", ""));
        /* ! is an ordinary character in [...], as in GLOB (fnmatch negates with it). */
        assert_true(glob_match("[!p]*", "postgres"));
        assert_true(glob_match("[!p]*", "!x"));
        assert_false(glob_match("[!p]*", "nginx"));
        assert_true(glob_match("[]a]", "]"));
        assert_true(glob_match("[a-]", "-"));
        assert_false(glob_match("[a", "a"));
        assert_false(glob_match("[[:alpha:]]", "a"));
        /* ? is a character, not a byte. */
        assert_true(glob_match("caf?", "caf\xc3\xa9"));
        assert_false(glob_match("caf??", "caf\xc3\xa9"));
        /* Polynomial: a run of stars that cannot match is given up at once. */
        assert_false(glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
}

static int glob_sqlite(sqlite3 *db, const char *glob, const char *text) {
        sqlite3_stmt *st;
        int v;

        assert_int_equal(sqlite3_prepare_v2(db, "SELECT ?1 GLOB ?2", -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, glob, -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        return v;
}

/* glob_match() and SQLite's GLOB agree on random globs and texts made of the characters that
 * mean something to either (and bytes that are not UTF-8): Watch and the live view let through
 * what Top's SQL does. */
static void test_glob_as_sqlite(void **state) {
        static const char *const atoms[] = { "a", "b", "*", "?", "[", "]", "^", "!", "-", "\\", ".", "\xc3\xa9",
                                             "\xc3", "\xa9", "\xff" };
        /* Under an emulated CPU (the legs under qemu) a tenth: the same code as on x86-64, where
         * the whole run takes 2 s, and 80 s there under arm64's TCG. */
        int rounds = getenv("TRAPSTAT_TEST_EMULATED") ? 20000 : 200000;
        sqlite3 *db;
        unsigned seed = 16;

        assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
        for (int i = 0; i < rounds; i++) {
                char glob[32] = "", text[32] = "";
                int n_glob = rand_r(&seed) % 8, n_text = rand_r(&seed) % 8;

                for (int k = 0; k < n_glob; k++)
                        strcat(glob, atoms[rand_r(&seed) % ELEMENTSOF(atoms)]);
                /* Texts from the non-special atoms mostly, so that matches are not rare. */
                for (int k = 0; k < n_text; k++)
                        strcat(text, atoms[rand_r(&seed) % (rand_r(&seed) % 4 ? 2 : ELEMENTSOF(atoms))]);
                if (glob_match(glob, text) != glob_sqlite(db, glob, text))
                        fail_msg("glob '%s' text '%s': glob_match %d, SQLite %d", glob, text, glob_match(glob, text),
                                 glob_sqlite(db, glob, text));
        }
        sqlite3_close(db);
}

static void test_match(void **state) {
        ProcessFilter f = PROCESS_FILTER_NONE;

        assert_true(process_filter_is_empty(&f));
        assert_true(process_filter_match(&f, 1, 0, NULL, "x"));

        assert_int_equal(process_filter_parse_pids(&f, "10,20"), 0);
        assert_false(process_filter_is_empty(&f));
        assert_true(process_filter_match(&f, 20, 0, NULL, "x"));
        assert_false(process_filter_match(&f, 30, 0, NULL, "x"));

        f.uid = 1000;
        assert_false(process_filter_match(&f, 10, 0, NULL, "x"));
        assert_true(process_filter_match(&f, 10, 1000, NULL, "x"));

        f.unit = strdup("web*.service");
        f.comm = strdup("py*");
        assert_true(process_filter_match(&f, 10, 1000, "web1.service", "python3"));
        /* A process without a unit never matches a unit filter, not even "*". */
        assert_false(process_filter_match(&f, 10, 1000, NULL, "python3"));
        assert_false(process_filter_match(&f, 10, 1000, "web1.service", "perl"));
        process_filter_done(&f);
        assert_true(process_filter_is_empty(&f));
}

static void test_parse_pids(void **state) {
        static const char *const bad[] = { "", ",", "1,", ",1", "1,,2", "0", "-1", "1x", "2147483648", " 1", "1 ", "+1" };
        ProcessFilter f = PROCESS_FILTER_NONE;
        char many[MAX_FILTER_PIDS * 4 + 8] = "";

        assert_int_equal(process_filter_parse_pids(&f, "2147483647"), 0);
        assert_int_equal(f.n_pids, 1);
        assert_int_equal(f.pids[0], 2147483647);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(process_filter_parse_pids(&f, bad[i]), -EINVAL);
                /* Unchanged by a refusal. */
                assert_int_equal(f.n_pids, 1);
                assert_int_equal(f.pids[0], 2147483647);
        }
        for (int i = 1; i <= MAX_FILTER_PIDS; i++)
                sprintf(many + strlen(many), "%s%d", i > 1 ? "," : "", i);
        assert_int_equal(process_filter_parse_pids(&f, many), 0);
        assert_int_equal(f.n_pids, MAX_FILTER_PIDS);
        assert_int_equal(f.pids[MAX_FILTER_PIDS - 1], MAX_FILTER_PIDS);
        strcat(many, ",99");
        assert_int_equal(process_filter_parse_pids(&f, many), -EINVAL);
        assert_int_equal(f.n_pids, MAX_FILTER_PIDS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_glob),
                cmocka_unit_test(test_glob_as_sqlite),
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_parse_pids),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
