/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format-util.h"
#include "macro.h"
#include "utf8-util.h"

static void test_format_fault(void **state) {
        Faults f = { .user = 1234, .read = 5 };
        char buf[16];

        assert_string_equal(format_fault(&f, fault_field_by_name("user"), buf), "1.23k");
        assert_string_equal(format_fault(&f, fault_field_by_name("read"), buf), "5");
        f.unknown = FAULTS_KNOWN_ACCESS;
        assert_string_equal(format_fault(&f, fault_field_by_name("user"), buf), "1.23k");
        assert_string_equal(format_fault(&f, fault_field_by_name("kernel"), buf), "0");
        for (size_t i = 0; i < n_fault_fields; i++)
                if (fault_fields[i].part == FAULTS_KNOWN_ACCESS)
                        assert_string_equal(format_fault(&f, &fault_fields[i], buf), "-");
        /* The causes of major faults are a part of their own. */
        f = (Faults) { .major = 3, .major_file = 2, .major_shmem = 1 };
        assert_string_equal(format_fault(&f, fault_field_by_name("majorFile"), buf), "2");
        assert_string_equal(format_fault(&f, fault_field_by_name("majorAnon"), buf), "0");
        f.unknown = FAULTS_KNOWN_MAJOR_CAUSE;
        assert_string_equal(format_fault(&f, fault_field_by_name("major"), buf), "3");
        assert_string_equal(format_fault(&f, fault_field_by_name("read"), buf), "0");
        for (size_t i = 0; i < n_fault_fields; i++)
                if (fault_fields[i].part == FAULTS_KNOWN_MAJOR_CAUSE)
                        assert_string_equal(format_fault(&f, &fault_fields[i], buf), "-");
        (void) state;
}

/* The count tables' columns: every Faults member once, MAJOR's causes right after it, each title
 * within a count's 6 characters; the parts asked for (history's counts leave the causes to a
 * table of their own); "-" where a part was not counted, by a daemon that said so (null) or an
 * older one that does not know it (missing). */
static void test_fault_columns(void **state) {
        static const char header[] = "   USER KERNEL  MINOR  MAJOR   FILE   ANON  SHMEM   READ  WRITE   EXEC   PROT";
        Faults f = { .user = 1234, .kernel = 7, .minor = 1200, .major = 41, .major_file = 30, .major_anon = 9,
                     .major_shmem = 1, .read = 1000, .write = 234, .exec = 0, .protection = 3 };
        char buf[FAULT_COLUMNS_SIZE];
        json_t *j;

        assert_int_equal(n_fault_columns, n_fault_fields);
        for (size_t i = 0; i < n_fault_fields; i++) {
                size_t seen = 0;

                for (size_t k = 0; k < n_fault_columns; k++)
                        seen += fault_column_field(k) == &fault_fields[i];
                assert_int_equal(seen, 1);
                assert_true(strlen(fault_columns[i].title) >= 1 && strlen(fault_columns[i].title) <= 6);
        }
        assert_null(fault_column_field(n_fault_columns));
        assert_string_equal(format_faults_header(FAULTS_KNOWN_ALL, buf), header);
        assert_string_equal(format_faults_cells(&f, FAULTS_KNOWN_ALL, buf),
                            "  1.23k      7  1.20k     41     30      9      1  1.00k    234      0      3");
        assert_int_equal(strlen(buf), strlen(header));
        /* The parts shown: the members of no part always. */
        assert_string_equal(format_faults_header(FAULTS_KNOWN_ACCESS, buf),
                            "   USER KERNEL  MINOR  MAJOR   READ  WRITE   EXEC   PROT");
        assert_string_equal(format_faults_cells(&f, FAULTS_KNOWN_ACCESS, buf),
                            "  1.23k      7  1.20k     41  1.00k    234      0      3");
        assert_string_equal(format_faults_header(FAULTS_KNOWN_MAJOR_CAUSE, buf),
                            "   USER KERNEL  MINOR  MAJOR   FILE   ANON  SHMEM");
        assert_string_equal(format_faults_header(0, buf), "   USER KERNEL  MINOR  MAJOR");

        f.unknown = FAULTS_KNOWN_MAJOR_CAUSE;
        assert_string_equal(format_faults_cells(&f, FAULTS_KNOWN_ALL, buf),
                            "  1.23k      7  1.20k     41      -      -      -  1.00k    234      0      3");
        f.unknown = FAULTS_KNOWN_ALL;
        assert_string_equal(format_faults_cells(&f, FAULTS_KNOWN_ALL, buf),
                            "  1.23k      7  1.20k     41      -      -      -      -      -      -      -");

        /* The daemon cannot tell the causes (a kernel before 5.17): null. */
        j = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:n}", "user", 5, "kernel", 1, "minor", 4, "major", 2,
                      "read", 3, "write", 2, "exec", 0, "protection", 0, "majorByCause");
        assert_int_equal(faults_from_json(j, &f), 0);
        json_decref(j);
        assert_string_equal(format_faults_cells(&f, FAULTS_KNOWN_ALL, buf),
                            "      5      1      4      2      -      -      -      3      2      0      0");
        /* An older daemon: no majorByCause at all. */
        j = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "user", 5, "kernel", 1, "minor", 4, "major", 2,
                      "read", 3, "write", 2, "exec", 0, "protection", 0);
        assert_int_equal(faults_from_json(j, &f), 0);
        json_decref(j);
        assert_string_equal(format_faults_cells(&f, FAULTS_KNOWN_ALL, buf),
                            "      5      1      4      2      -      -      -      3      2      0      0");
        /* A daemon that counts them: shmem 0 is a count, not "-". */
        j = json_pack("{s:i, s:i, s:i, s:i, s:n, s:n, s:n, s:n, s:{s:i, s:i, s:i}}", "user", 5, "kernel", 1, "minor",
                      4, "major", 2, "read", "write", "exec", "protection", "majorByCause", "file", 1, "anon", 1, "shmem",
                      0);
        assert_int_equal(faults_from_json(j, &f), 0);
        json_decref(j);
        assert_string_equal(format_faults_cells(&f, FAULTS_KNOWN_ALL, buf),
                            "      5      1      4      2      1      1      0      -      -      -      -");
        (void) state;
}

/* The busiest of a map of counts: most first, ties by name, at most max, "-" for none. */
static void test_format_busiest(void **state) {
        json_t *map = json_pack("{s:i, s:i, s:i, s:i}", "GP", 12, "UD", 1000, "BP", 12, "DE", 0);
        char buf[64];

        format_busiest(map, 2, 1.0, buf, sizeof(buf));
        assert_string_equal(buf, "UD:1.00k BP:12");
        format_busiest(map, 5, 4.0, buf, sizeof(buf));
        assert_string_equal(buf, "UD:250 BP:3.0 GP:3.0");
        assert_int_equal(map_total(map), 1024);
        format_busiest(NULL, 2, 1.0, buf, sizeof(buf));
        assert_string_equal(buf, "-");
        assert_int_equal(map_total(NULL), 0);
        json_decref(map);
        (void) state;
}

static void test_format_count(void **state) {
        char buf[16];

        assert_string_equal(format_count(0, buf), "0");
        assert_string_equal(format_count(999, buf), "999");
        assert_string_equal(format_count(1000, buf), "1.00k");
        assert_string_equal(format_count(1234, buf), "1.23k");
        assert_string_equal(format_count(12345, buf), "12.3k");
        assert_string_equal(format_count(999499, buf), "999k");
        assert_string_equal(format_count(999949, buf), "1.00M");
        assert_string_equal(format_count(999999, buf), "1.00M");
        assert_string_equal(format_count(UINT64_MAX, buf), "18.4E");
}

static void test_format_rate(void **state) {
        char buf[16];

        assert_string_equal(format_rate(0, buf), "0");
        assert_string_equal(format_rate(-1, buf), "0");
        assert_string_equal(format_rate(0.25, buf), "0.2");
        assert_string_equal(format_rate(5, buf), "5.0");
        assert_string_equal(format_rate(12.4, buf), "12");
        assert_string_equal(format_rate(999, buf), "999");
        assert_string_equal(format_rate(1234.5, buf), "1.23k");
        assert_string_equal(format_rate(2.5e9, buf), "2.50G");
}

/* A share of time as %FAULT and %STALL show it (seconds per second -> percent, as %CPU); the
 * memory stall of a Stall is what %STALL divides. */
static void test_format_share(void **state) {
        Stall s = { .ns = { [STALL_SWAPIN] = 100000000, [STALL_THRASHING] = 0, [STALL_RECLAIM] = 150000000,
                            [STALL_BLKIO] = 700000000 } };
        char buf[16];

        assert_string_equal(format_share(0, buf), "0");
        assert_string_equal(format_share(-0.5, buf), "0");
        assert_string_equal(format_share(0.0004, buf), "<0.1");
        assert_string_equal(format_share(0.001, buf), "0.1");
        assert_string_equal(format_share(0.25, buf), "25.0");
        assert_string_equal(format_share(0.123, buf), "12.3");
        assert_string_equal(format_share(9.9994, buf), "999.9");
        assert_string_equal(format_share(12.5, buf), "1250");
        /* 250 ms of memory (blkio not in it) over 1 s. */
        assert_int_equal(stall_memory_ns(&s), 250000000);
        assert_string_equal(format_share((double) stall_memory_ns(&s) / 1e9, buf), "25.0");
}

static void test_format_times(void **state) {
        char buf[32];

        setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
        tzset();
        /* 2026-11-22 10:00:00 UTC */
        assert_string_equal(format_time_usec(UINT64_C(1795341600000000), buf), "2026-11-22 11:00:00");
        assert_string_equal(format_time_usec_short(UINT64_C(1795341600000000), buf), "11-22 11:00:00");
        assert_string_equal(format_time_iso8601(UINT64_C(1795341600000000), buf), "2026-11-22T11:00:00+01:00");
        setenv("TZ", "UTC0", 1);
        tzset();
        assert_string_equal(format_time_iso8601(UINT64_C(1795341600000000), buf), "2026-11-22T10:00:00+00:00");
        assert_string_equal(format_duration_usec(120000, buf), "120ms");
        assert_string_equal(format_duration_usec(45000000, buf), "45s");
        assert_string_equal(format_duration_usec(UINT64_C(7380000000), buf), "2h03m");
        assert_string_equal(format_duration_usec(UINT64_C(90000000000), buf), "1d01h");
}

static void test_sparkline(void **state) {
        static const uint64_t v[] = { 0, 1, 2, 4, 8, 0, 8 };
        char *s;

        s = sparkline(v, 7, 80, false);
        assert_string_equal(s, " .:=@ @");
        free(s);
        s = sparkline(v, 7, 80, true);
        assert_string_equal(s, " \u2581\u2582\u2584\u2588 \u2588");
        free(s);
        /* Wider than the width: neighbours are summed, every value counted once. */
        s = sparkline(v, 7, 3, false);
        assert_int_equal(strlen(s), 3);
        assert_string_equal(s, ".-@"); /* 0+1=1, 2+4=6, 8+0+8=16 */
        free(s);
        s = sparkline(v, 0, 10, false);
        assert_string_equal(s, "");
        free(s);
        assert_null(sparkline(v, 7, 0, true));
        /* Huge values do not overflow. */
        {
                uint64_t big[] = { UINT64_MAX, UINT64_MAX, 1 };
                s = sparkline(big, 3, 3, false);
                assert_string_equal(s, "@@.");
                free(s);
                s = sparkline(big, 3, 2, false); /* MAX + 1 saturates */
                assert_string_equal(s, "@@");
                free(s);
        }
}

/* csv_field() of each of n texts, joined by '|', as one string to free. */
static char *csv_fields(const char *const *texts, size_t n, bool terminal, bool utf8) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        fputc('|', f);
                csv_field(f, texts[i], terminal, utf8);
        }
        fclose(f);
        return text;
}

static void test_csv_field(void **state) {
        static const char *const texts[] = { "plain", "a,b", "say \"hi\"", "two\nlines", NULL };
        char *text;

        /* A file or a pipe: exact, whatever the locale. */
        for (int utf8 = 0; utf8 <= 1; utf8++) {
                text = csv_fields(texts, ELEMENTSOF(texts), false, utf8);
                assert_string_equal(text, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|");
                free(text);
        }
        (void) state;
}

static void test_csv_field_on_a_terminal(void **state) {
        /* What a process may call itself: a title set by OSC, a screen cleared, a forged line, a
         * comma and a quote (still CSV's), a backslash, UTF-8 (kept where the terminal reads it). */
        static const char *const texts[] = {
                "\x1b]0;pwn\x07 x\x1b[2J",
                "line1\nline2\r",
                "a,\"b\"\tc",
                "back\\slash",
                "\u00fcn\u00efc\u00f6d\u00e9 \u65e5\u672c",
                "C1 \xc2\x9b",
                "bad\xff",
                "",
                NULL,
        };
        char *text;

        text = csv_fields(texts, ELEMENTSOF(texts), false, true);
        assert_string_equal(text, "\x1b]0;pwn\x07 x\x1b[2J|\"line1\nline2\r\"|\"a,\"\"b\"\"\tc\"|back\\slash|"
                                  "\u00fcn\u00efc\u00f6d\u00e9 \u65e5\u672c|C1 \xc2\x9b|bad\xff||");
        free(text);

        text = csv_fields(texts, ELEMENTSOF(texts), true, true);
        assert_string_equal(text, "\\e]0;pwn\\a x\\e[2J|line1\\nline2\\r|\"a,\"\"b\"\"\\tc\"|back\\\\slash|"
                                  "\u00fcn\u00efc\u00f6d\u00e9 \u65e5\u672c|C1 \\u009b|bad\\xff||");
        free(text);

        /* A terminal whose locale is not UTF-8: pure ASCII. */
        text = csv_fields(texts, ELEMENTSOF(texts), true, false);
        assert_string_equal(text, "\\e]0;pwn\\a x\\e[2J|line1\\nline2\\r|\"a,\"\"b\"\"\\tc\"|back\\\\slash|"
                                  "\\xc3\\xbcn\\xc3\\xafc\\xc3\\xb6d\\xc3\\xa9 \\xe6\\x97\\xa5\\xe6\\x9c\\xac|"
                                  "C1 \\xc2\\x9b|bad\\xff||");
        for (const char *p = text; *p; p++)
                assert_true(*p >= 0x20 && *p < 0x7f);
        free(text);
        (void) state;
}

static char *escaped(const char *s, bool utf8) {
        char *e = NULL;

        assert_int_equal(escape_untrusted(s, utf8, &e), 0);
        assert_non_null(e);
        return e;
}

#define assert_escapes(s, utf8, expected)                                                          \
        do {                                                                                       \
                char *_e = escaped(s, utf8);                                                       \
                assert_string_equal(_e, expected);                                                 \
                free(_e);                                                                          \
        } while (0)

static void test_escape_controls(void **state) {
        static const char *const expected[0x20] = {
                [0x01] = "\\x01", [0x02] = "\\x02", [0x03] = "\\x03", [0x04] = "\\x04", [0x05] = "\\x05",
                [0x06] = "\\x06", [0x07] = "\\a",   [0x08] = "\\b",   [0x09] = "\\t",   [0x0a] = "\\n",
                [0x0b] = "\\v",   [0x0c] = "\\f",   [0x0d] = "\\r",   [0x0e] = "\\x0e", [0x0f] = "\\x0f",
                [0x10] = "\\x10", [0x11] = "\\x11", [0x12] = "\\x12", [0x13] = "\\x13", [0x14] = "\\x14",
                [0x15] = "\\x15", [0x16] = "\\x16", [0x17] = "\\x17", [0x18] = "\\x18", [0x19] = "\\x19",
                [0x1a] = "\\x1a", [0x1b] = "\\e",   [0x1c] = "\\x1c", [0x1d] = "\\x1d", [0x1e] = "\\x1e",
                [0x1f] = "\\x1f",
        };

        /* Every control character, alone, in both modes. */
        for (unsigned c = 1; c < 0x20; c++) {
                char in[2] = { (char) c, '\0' };

                assert_escapes(in, true, expected[c]);
                assert_escapes(in, false, expected[c]);
        }
        assert_escapes("\x7f", true, "\\x7f");
        assert_escapes("", true, "");
        assert_escapes("plain-ASCII text 0123 ~!@#$%^&*()", true, "plain-ASCII text 0123 ~!@#$%^&*()");
        /* A backslash is doubled, so that a literal "\e" cannot pass for an escape. */
        assert_escapes("a\\b", true, "a\\\\b");
        assert_escapes("\\e[2J", false, "\\\\e[2J");
        /* The hostile names of the issue. */
        assert_escapes("\x1b[2Jx", true, "\\e[2Jx");
        assert_escapes("a\nb", true, "a\\nb");
        assert_escapes("\x1b]0;pwn\x07", true, "\\e]0;pwn\\a");
        assert_escapes("\x1b]0;pwn\x1b\\", true, "\\e]0;pwn\\e\\\\");
        assert_escapes("tab\there\r\n", true, "tab\\there\\r\\n");
}

static void test_escape_c1(void **state) {
        /* U+0080..U+009F as \u00NN: U+009B is CSI, U+009D OSC, U+0090 DCS to some terminals. */
        assert_escapes("\xc2\x80", true, "\\u0080");
        assert_escapes("\xc2\x9b" "31mred", true, "\\u009b31mred");
        assert_escapes("\xc2\x9d" "0;t\xc2\x9c", true, "\\u009d0;t\\u009c");
        assert_escapes("\xc2\x9f", true, "\\u009f");
        /* U+00A0 (no-break space) and U+00BF are printable: as they are. */
        assert_escapes("\xc2\xa0\xc2\xbf", true, "\xc2\xa0\xc2\xbf");
        /* Without UTF-8, byte by byte. */
        assert_escapes("\xc2\x9b", false, "\\xc2\\x9b");
}

static void test_escape_invalid_utf8(void **state) {
        assert_escapes("\xff", true, "\\xff");
        assert_escapes("\xfe\xff", true, "\\xfe\\xff");
        assert_escapes("a\x80z", true, "a\\x80z");                             /* stray continuation */
        assert_escapes("\xc0\xaf", true, "\\xc0\\xaf");                          /* overlong '/' */
        assert_escapes("\xc1\xbf", true, "\\xc1\\xbf");                          /* overlong U+007F */
        assert_escapes("\xe0\x80\xaf", true, "\\xe0\\x80\\xaf");                  /* overlong, 3 bytes */
        assert_escapes("\xf0\x80\x80\xaf", true, "\\xf0\\x80\\x80\\xaf");          /* overlong, 4 bytes */
        assert_escapes("\xed\xa0\x80", true, "\\xed\\xa0\\x80");                  /* surrogate U+D800 */
        assert_escapes("\xed\xbf\xbf", true, "\\xed\\xbf\\xbf");                  /* surrogate U+DFFF */
        assert_escapes("\xf4\x90\x80\x80", true, "\\xf4\\x90\\x80\\x80");          /* U+110000 */
        assert_escapes("\xf8\x88\x80\x80\x80", true, "\\xf8\\x88\\x80\\x80\\x80"); /* 5 bytes */
        assert_escapes("\xe6\x97x", true, "\\xe6\\x97x");                        /* truncated by a byte */
        assert_escapes("ab\xe6", true, "ab\\xe6");                                /* truncated by the end */
        assert_escapes("\xf0\x9f\x98", true, "\\xf0\\x9f\\x98");
        /* A truncated sequence does not swallow the control character that cut it. */
        assert_escapes("\xe6\x1b[2J", true, "\\xe6\\e[2J");
        assert_escapes("\xc2\n", true, "\\xc2\\n");
}

static void test_escape_valid_utf8(void **state) {
        /* Printable UTF-8 of every length passes, up to U+10FFFF and right after the surrogates. */
        assert_escapes("ünïcödé", true, "ünïcödé");
        assert_escapes("\xdf\xbf", true, "\xdf\xbf");                 /* U+07FF */
        assert_escapes("日本語", true, "日本語");
        assert_escapes("\xed\x9f\xbf\xee\x80\x80", true, "\xed\x9f\xbf\xee\x80\x80"); /* U+D7FF U+E000 */
        assert_escapes("\xf0\x9f\x98\x80", true, "\xf0\x9f\x98\x80"); /* U+1F600 */
        assert_escapes("\xf4\x8f\xbf\xbf", true, "\xf4\x8f\xbf\xbf"); /* U+10FFFF */
        /* Not for a terminal that does not read UTF-8: pure ASCII out. */
        assert_escapes("é日", false, "\\xc3\\xa9\\xe6\\x97\\xa5");
}

/* Reads escaped text back into bytes; the exact inverse of escape_untrusted(). */
static size_t unescape(const char *e, char *out) {
        static const char names[] = "a\ab\bt\tn\nv\vf\fr\re\x1b\\\\";
        size_t n = 0;

        while (*e) {
                if (*e != '\\') {
                        out[n++] = *e++;
                        continue;
                }
                if (e[1] == 'x' || e[1] == 'u') {
                        size_t digits = e[1] == 'x' ? 2 : 4;
                        char hex[5] = {};
                        unsigned long v;

                        memcpy(hex, e + 2, digits);
                        v = strtoul(hex, NULL, 16);
                        if (e[1] == 'x')
                                out[n++] = (char) v;
                        else {
                                assert_true(v >= 0x80 && v <= 0x9f); /* assert_in_range: deprecated in cmocka 2 */
                                out[n++] = (char) 0xc2;
                                out[n++] = (char) v;
                        }
                        e += 2 + digits;
                        continue;
                }
                const char *k = strchr(names, e[1]);
                assert_non_null(k);
                assert_int_equal((k - names) % 2, 0);
                out[n++] = k[1];
                e += 2;
        }
        return n;
}

static void assert_safe(const char *s, bool utf8) {
        _cleanup_free_ char *e = escaped(s, utf8);
        char back[4096];
        size_t n;

        for (const char *p = e; *p;) {
                unsigned char c = (unsigned char) *p;
                uint32_t cp;
                int l;

                assert_true(c >= 0x20 && c != 0x7f);
                if (!utf8)
                        assert_true(c < 0x80);
                /* Well-formed UTF-8 without C1 controls. */
                l = utf8_decode(p, strlen(p), &cp);
                assert_true(l > 0);
                assert_false(cp >= 0x80 && cp <= 0x9f);
                p += l;
        }
        assert_true(strlen(e) < sizeof(back));
        n = unescape(e, back);
        assert_int_equal(n, strlen(s));
        assert_memory_equal(back, s, n);
}

static void test_escape_round_trip(void **state) {
        char s[512];

        /* Every byte after every byte: all pairs, also each byte alone and before a NUL. */
        for (unsigned a = 1; a < 256; a++)
                for (unsigned b = 0; b < 256; b++) {
                        s[0] = (char) a;
                        s[1] = (char) b;
                        s[2] = '\0';
                        assert_safe(s, true);
                        assert_safe(s, false);
                }
        /* Random strings, biased towards the interesting bytes. */
        srand(42);
        for (int i = 0; i < 20000; i++) {
                static const unsigned char pick[] = { 0x1b, '\n', '\\', 0x07, 0x7f, 0x80, 0x9b, 0xbf,
                                                      0xc2, 0xe0, 0xed, 0xf0, 0xf4, 0xff, 'a', 'x' };
                size_t n = (size_t) (rand() % 40);

                for (size_t k = 0; k < n; k++) {
                        int c = rand() % 3 ? pick[rand() % sizeof(pick)] : rand() % 255 + 1;
                        s[k] = (char) c;
                }
                s[n] = '\0';
                assert_safe(s, true);
                assert_safe(s, false);
        }
}

static void test_text_width(void **state) {
        size_t w;

        assert_int_equal(text_width(""), 0);
        assert_int_equal(text_width("abc"), 3);
        assert_int_equal(text_width("\\e[2Jx"), 6);
        /* An escape sequence is never cut in two. */
        assert_int_equal(text_prefix("ab\\x1bcd", 3, &w), 2);
        assert_int_equal(w, 2);
        assert_int_equal(text_prefix("ab\\x1bcd", 6, &w), 6);
        assert_int_equal(text_prefix("a\\u009bz", 6, &w), 1);
        assert_int_equal(text_prefix("a\\u009bz", 7, &w), 7);
        assert_int_equal(text_prefix("\\\\e", 1, &w), 0);
        assert_int_equal(text_prefix("\\\\e", 2, &w), 2);
        assert_int_equal(text_prefix("abc", SIZE_MAX, &w), 3);
        assert_int_equal(w, 3);
        /* Nor a UTF-8 character: "ü" is two bytes, one column. */
        assert_int_equal(text_width("ünï"), 3);
        assert_int_equal(text_prefix("ünï", 2, &w), 3);
        assert_int_equal(w, 2);

        if (!setlocale(LC_CTYPE, "C.UTF-8"))
                skip();
        /* Wide characters take two columns, combining marks none. */
        assert_int_equal(text_width("日本語"), 6);
        assert_int_equal(text_prefix("日本語", 5, &w), 6);
        assert_int_equal(w, 4);
        assert_int_equal(text_width("e\xcc\x81"), 1); /* e + U+0301 */
        setlocale(LC_CTYPE, "C");
}

static void test_format_cell(void **state) {
        char *c = NULL;

        assert_int_equal(format_cell("a\nb", true, 15, 15, &c), 0);
        assert_string_equal(c, "a\\nb           ");
        free(c);
        /* Cut at 15 columns, at an escape's boundary: "\e[2J" x3 is 5 columns each. */
        assert_int_equal(format_cell("\x1b[2J\x1b[2J\x1b[2J\x1b[2J", true, 15, 15, &c), 0);
        assert_string_equal(c, "\\e[2J\\e[2J\\e[2J");
        free(c);
        assert_int_equal(format_cell("\xff\xff\xff\xff", true, 15, 15, &c), 0);
        assert_string_equal(c, "\\xff\\xff\\xff   ");
        free(c);
        /* Padding counts columns, not bytes. */
        assert_int_equal(format_cell("ünï", true, 5, 5, &c), 0);
        assert_string_equal(c, "ünï  ");
        free(c);
        assert_int_equal(format_cell("ünï", false, 0, SIZE_MAX, &c), 0);
        assert_string_equal(c, "\\xc3\\xbcn\\xc3\\xaf");
        free(c);
        /* No limit, no padding: as escape_untrusted(). */
        assert_int_equal(format_cell("x\ty", true, 0, SIZE_MAX, &c), 0);
        assert_string_equal(c, "x\\ty");
        free(c);
}

/* A path keeps its end, the file's name: "..." and the tail that fits, padded to the width; a
 * path that fits is only padded. */
static void test_format_path_cell(void **state) {
        char *c = NULL;

        assert_int_equal(format_path_cell("/usr/bin/app", true, 14, &c), 0);
        assert_string_equal(c, "/usr/bin/app  ");
        free(c);
        assert_int_equal(format_path_cell("/usr/bin/app", true, 12, &c), 0);
        assert_string_equal(c, "/usr/bin/app");
        free(c);
        assert_int_equal(format_path_cell("/usr/lib/x86_64-linux-gnu/libc.so.6", true, 16, &c), 0);
        assert_string_equal(c, "...gnu/libc.so.6");
        free(c);
        /* Narrower than the dots: only the tail. */
        assert_int_equal(format_path_cell("/usr/bin/app", true, 3, &c), 0);
        assert_string_equal(c, "app");
        free(c);
}

/* The path is escaped first, and cut only between escape sequences and characters. */
static void test_format_path_cell_escapes(void **state) {
        char *c = NULL;

        /* "/tmp/\e[2J.so" is 13 columns, "\e" two of them: kept whole or dropped whole. */
        assert_int_equal(format_path_cell("/tmp/\x1b" "[2J.so", true, 13, &c), 0);
        assert_string_equal(c, "/tmp/\\e[2J.so");
        free(c);
        assert_int_equal(format_path_cell("/tmp/\x1b" "[2J.so", true, 11, &c), 0);
        assert_string_equal(c, "...\\e[2J.so");
        free(c);
        assert_int_equal(format_path_cell("/tmp/\x1b" "[2J.so", true, 10, &c), 0);
        assert_string_equal(c, "...[2J.so ");
        free(c);
        /* Bytes that are not UTF-8, four columns each. */
        assert_int_equal(format_path_cell("/opt/\xff\xfe", true, 9, &c), 0);
        assert_string_equal(c, "...\\xfe  ");
        free(c);
        /* "ü" is two bytes and one column. */
        assert_int_equal(format_path_cell("/opt/ünï/x", true, 7, &c), 0);
        assert_string_equal(c, "...nï/x");
        free(c);
        assert_int_equal(format_path_cell("/opt/ünï/x", true, 8, &c), 0);
        assert_string_equal(c, "...ünï/x");
        free(c);
        /* A newline never reaches the table. */
        assert_int_equal(format_path_cell("/a\nb/evil", true, 10, &c), 0);
        assert_string_equal(c, "/a\\nb/evil");
        free(c);
        assert_int_equal(format_path_cell("/a\nb/evil", true, 9, &c), 0);
        assert_string_equal(c, "...b/evil");
        free(c);
}

/* A container's key: its name where it has one, else its runtime and the start of its id, "-" for
 * none. */
static void test_container_key(void **state) {
        static const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        char *k = NULL;

        assert_int_equal(format_container_key(NULL, NULL, NULL, &k), 0);
        assert_string_equal(k, "-");
        free(k);
        assert_int_equal(format_container_key("machined", "web-1", "web-1", &k), 0);
        assert_string_equal(k, "web-1");
        free(k);
        assert_int_equal(format_container_key("docker", id, NULL, &k), 0);
        assert_string_equal(k, "docker:0123456789ab");
        free(k);
        /* An empty name is none; a short id is whole; no id at all is said. */
        assert_int_equal(format_container_key("containerd", id, "", &k), 0);
        assert_string_equal(k, "containerd:0123456789ab");
        free(k);
        assert_int_equal(format_container_key("podman", "abc", NULL, &k), 0);
        assert_string_equal(k, "podman:abc");
        free(k);
        assert_int_equal(format_container_key("lxc", NULL, NULL, &k), 0);
        assert_string_equal(k, "lxc:?");
        free(k);
        /* Untrusted: not escaped here (the tables escape the key as any cell). */
        assert_int_equal(format_container_key("lxc", "x", "a\x1b[2J", &k), 0);
        assert_string_equal(k, "a\x1b[2J");
        free(k);
}

static void test_utf8(void **state) {
        uint32_t cp = 0;
        char *s = NULL;

        assert_int_equal(utf8_decode("a", 1, &cp), 1);
        assert_int_equal(cp, 'a');
        assert_int_equal(utf8_decode("\xc3\xa9", 2, &cp), 2);
        assert_int_equal(cp, 0xe9);
        assert_int_equal(utf8_decode("\xe6\x97\xa5", 3, &cp), 3);
        assert_int_equal(cp, 0x65e5);
        assert_int_equal(utf8_decode("\xf4\x8f\xbf\xbf", 4, &cp), 4);
        assert_int_equal(cp, 0x10ffff);
        /* n bounds the read: a character longer than what may be read is cut short. */
        assert_int_equal(utf8_decode("\xe6\x97\xa5", 2, &cp), -EILSEQ);
        assert_int_equal(utf8_decode("\xc0\x80", 2, &cp), -EILSEQ);
        assert_int_equal(utf8_decode("\xed\xa0\x80", 3, &cp), -EILSEQ);
        assert_int_equal(utf8_decode("\xf4\x90\x80\x80", 4, &cp), -EILSEQ);
        assert_int_equal(utf8_decode("\x80", 1, NULL), -EILSEQ);
        assert_int_equal(utf8_decode("a", 0, NULL), -EILSEQ);

        /* U+FFFD per maximal ill-formed subpart, as Python's bytes.decode("utf-8", "replace"). */
        assert_int_equal(utf8_replace_invalid("valid ünï", &s), 0);
        assert_string_equal(s, "valid ünï");
        free(s);
        assert_int_equal(utf8_replace_invalid("a\xff" "b\xc0\xaf|\xed\xa0\x80|\xf0\x9f\x98 |\xe6\x97", &s), 0);
        assert_string_equal(s, "a\ufffdb\ufffd\ufffd|\ufffd\ufffd\ufffd|\ufffd |\ufffd");
        free(s);
        /* A name the kernel cut inside a character (comm is 15 bytes). */
        assert_int_equal(utf8_replace_invalid("aaaaaaaaaaaaaa\xc3", &s), 0);
        assert_string_equal(s, "aaaaaaaaaaaaaa\ufffd");
        free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_count),
                cmocka_unit_test(test_format_fault),  cmocka_unit_test(test_format_rate),
                cmocka_unit_test(test_format_share),
                cmocka_unit_test(test_fault_columns), cmocka_unit_test(test_format_busiest),
                cmocka_unit_test(test_format_times),  cmocka_unit_test(test_sparkline),
                cmocka_unit_test(test_csv_field),     cmocka_unit_test(test_csv_field_on_a_terminal),
                cmocka_unit_test(test_escape_controls),
                cmocka_unit_test(test_escape_c1),     cmocka_unit_test(test_escape_invalid_utf8),
                cmocka_unit_test(test_escape_valid_utf8), cmocka_unit_test(test_escape_round_trip),
                cmocka_unit_test(test_text_width),    cmocka_unit_test(test_format_cell),
                cmocka_unit_test(test_format_path_cell), cmocka_unit_test(test_format_path_cell_escapes),
                cmocka_unit_test(test_utf8),          cmocka_unit_test(test_container_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
