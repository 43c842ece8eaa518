/* SPDX-License-Identifier: MIT */
#include "format-util.h"

#include <errno.h>
#include <inttypes.h>
#include <langinfo.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "fault-time.h"
#include "macro.h"
#include "time-util.h"
#include "utf8-util.h"

static const char *format_scaled(double v, char buf[static 16]) {
        static const char units[] = "kMGTPE";
        size_t u = 0;

        for (v /= 1000.0; v >= 999.5 && u + 1 < sizeof(units) - 1; u++)
                v /= 1000.0;
        snprintf(buf, 16, v < 9.995 ? "%.2f%c" : v < 99.95 ? "%.1f%c" : "%.0f%c", v, units[u]);
        return buf;
}

const char *format_count(uint64_t n, char buf[static 16]) {
        if (n < 1000) {
                snprintf(buf, 16, "%" PRIu64, n);
                return buf;
        }
        return format_scaled((double) n, buf);
}

const char *format_fault(const Faults *f, const FaultField *field, char buf[static 16]) {
        if (!faults_field_known(f, field, FAULTS_KNOWN_ALL))
                return "-";
        return format_count(faults_get(f, field), buf);
}

/* Left to right: MAJOR, then its causes, each a part of it; then the access kinds. A count takes
 * at most 5 characters ("999", "1.23k", "123M"): 7 a column with the blank before it. */
const FaultColumn fault_columns[] = {
        { "user", "USER" },       { "kernel", "KERNEL" },     { "minor", "MINOR" },
        { "major", "MAJOR" },     { "majorFile", "FILE" },    { "majorAnon", "ANON" },
        { "majorShmem", "SHMEM" }, { "read", "READ" },        { "write", "WRITE" },
        { "exec", "EXEC" },       { "protection", "PROT" },
};
const size_t n_fault_columns = ELEMENTSOF(fault_columns);

const FaultField *fault_column_field(size_t i) {
        return i < n_fault_columns ? fault_field_by_name(fault_columns[i].name) : NULL;
}

/* Whether fault_columns[i] is among parts (a member of no part always is). */
static bool fault_column_in(size_t i, FaultsKnown parts) {
        const FaultField *field = fault_column_field(i);

        return field && (!field->part || (field->part & parts));
}

const char *format_faults_header(FaultsKnown parts, char buf[static FAULT_COLUMNS_SIZE]) {
        size_t used = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n_fault_columns && used < FAULT_COLUMNS_SIZE; i++)
                if (fault_column_in(i, parts))
                        used += (size_t) snprintf(buf + used, FAULT_COLUMNS_SIZE - used, " %6s",
                                                  fault_columns[i].title);
        return buf;
}

const char *format_faults_cells(const Faults *f, FaultsKnown parts, char buf[static FAULT_COLUMNS_SIZE]) {
        size_t used = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n_fault_columns && used < FAULT_COLUMNS_SIZE; i++) {
                char cell[16];

                if (fault_column_in(i, parts))
                        used += (size_t) snprintf(buf + used, FAULT_COLUMNS_SIZE - used, " %6s",
                                                  format_fault(f, fault_column_field(i), cell));
        }
        return buf;
}

const char *format_rate(double per_sec, char buf[static 16]) {
        if (!(per_sec > 0)) /* also NaN */
                snprintf(buf, 16, "0");
        else if (per_sec < 9.95)
                snprintf(buf, 16, "%.1f", per_sec);
        else if (per_sec < 999.5)
                snprintf(buf, 16, "%.0f", per_sec);
        else
                format_scaled(per_sec, buf);
        return buf;
}

const char *format_share(double fraction, char buf[static 16]) {
        double percent = fraction * 100;

        if (!(percent > 0))
                snprintf(buf, 16, "0");
        else if (percent < 0.05)
                snprintf(buf, 16, "<0.1");
        else if (percent < 999.95)
                snprintf(buf, 16, "%.1f", percent);
        else
                snprintf(buf, 16, "%.0f", percent);
        return buf;
}

const char *format_ns(uint64_t ns, bool utf8, char buf[static 16]) {
        static const struct {
                uint64_t scale;
                const char *unit;
        } units[] = { { 1000000000, "s" }, { 1000000, "ms" }, { 1000, "µs" } };

        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (ns >= units[i].scale) {
                        double v = (double) ns / (double) units[i].scale;
                        const char *unit = i == 2 && !utf8 ? "us" : units[i].unit;

                        snprintf(buf, 16, v < 9.995 ? "%.2f%s" : v < 99.95 ? "%.1f%s" : "%.0f%s", v, unit);
                        return buf;
                }
        snprintf(buf, 16, "%" PRIu64 "ns", ns);
        return buf;
}

/* A bucket edge in µs (a power of two): "4µs", "1ms" (1024 µs shown as about 1 ms), "4.2s". */
static void format_edge_us(uint64_t us, const char *micro, char buf[static 12]) {
        if (us < 1000)
                snprintf(buf, 12, "%" PRIu64 "%s", us, micro);
        else if (us < 1000000)
                snprintf(buf, 12, "%.0fms", (double) us / 1000);
        else
                snprintf(buf, 12, "%.1fs", (double) us / 1000000);
}

const char *format_fault_bucket(unsigned bucket, bool utf8, char buf[static 24]) {
        const char *micro = utf8 ? "µs" : "us";
        char lo[12], hi[12];

        if (bucket == 0) {
                snprintf(buf, 24, "<1%s", micro);
                return buf;
        }
        format_edge_us(fault_time_bucket_low_ns(bucket) / 1000, micro, lo);
        if (bucket >= FAULT_TIME_BUCKETS - 1) {
                snprintf(buf, 24, "%s%s", utf8 ? "≥" : ">=", lo);
                return buf;
        }
        format_edge_us(fault_time_bucket_high_ns(bucket) / 1000, micro, hi);
        snprintf(buf, 24, "%s-%s", lo, hi);
        return buf;
}

static const char *format_local_time(uint64_t usec, const char *format, char buf[static 32]) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, 32, format, &tm) == 0)
                snprintf(buf, 32, "@%" PRIu64, usec / USEC_PER_SEC);
        return buf;
}

const char *format_time_usec(uint64_t usec, char buf[static 32]) {
        return format_local_time(usec, "%Y-%m-%d %H:%M:%S", buf);
}

const char *format_time_usec_short(uint64_t usec, char buf[static 32]) {
        return format_local_time(usec, "%m-%d %H:%M:%S", buf);
}

const char *format_time_iso8601(uint64_t usec, char buf[static 32]) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;
        size_t l;

        /* strftime's %z is "+0100"; ISO 8601 extended format wants "+01:00". */
        if (!localtime_r(&t, &tm) || (l = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S%z", &tm)) < 5 || l + 1 >= 32) {
                snprintf(buf, 32, "@%" PRIu64, usec / USEC_PER_SEC);
                return buf;
        }
        memmove(buf + l - 1, buf + l - 2, 3);
        buf[l - 2] = ':';
        return buf;
}

const char *format_duration_usec(uint64_t usec, char buf[static 32]) {
        uint64_t s = usec / USEC_PER_SEC;

        if (usec < USEC_PER_SEC)
                snprintf(buf, 32, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
        else if (s < 60)
                snprintf(buf, 32, "%" PRIu64 "s", s);
        else if (s < 3600)
                snprintf(buf, 32, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
        else if (s < 86400)
                snprintf(buf, 32, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
        else
                snprintf(buf, 32, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s / 3600 % 24);
        return buf;
}

char *sparkline(const uint64_t *values, size_t n, size_t width, bool utf8) {
        static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584",
                                              "\u2585", "\u2586", "\u2587", "\u2588" };
        static const char ascii[] = ".:-=+*#@";
        size_t cols, i, c;
        uint64_t *sums, max = 0;
        char *s, *p;

        if (width == 0)
                return NULL;
        cols = n < width ? n : width;
        sums = calloc(cols ? cols : 1, sizeof(uint64_t));
        /* At most 3 bytes per UTF-8 block character. */
        s = malloc(cols * 3 + 1);
        if (!sums || !s) {
                free(sums);
                free(s);
                return NULL;
        }
        /* Column c sums values [c*n/cols, (c+1)*n/cols): every value lands in exactly one. */
        for (c = 0; c < cols; c++) {
                for (i = c * n / cols; i < (c + 1) * n / cols; i++)
                        sums[c] = sums[c] > UINT64_MAX - values[i] ? UINT64_MAX : sums[c] + values[i];
                if (sums[c] > max)
                        max = sums[c];
        }
        p = s;
        for (c = 0; c < cols; c++) {
                size_t level;

                if (sums[c] == 0) {
                        *p++ = ' ';
                        continue;
                }
                /* 1..8: the largest gets the full block, anything non-zero at least the lowest. */
                level = (size_t) ((long double) sums[c] * 8 / (long double) max + 0.999999L);
                level = level < 1 ? 1 : level > 8 ? 8 : level;
                if (utf8) {
                        size_t l = strlen(blocks[level - 1]);

                        memcpy(p, blocks[level - 1], l);
                        p += l;
                } else
                        *p++ = ascii[level - 1];
        }
        *p = '\0';
        free(sums);
        return s;
}

static const char hex[] = "0123456789abcdef";

static char *escape_byte(char *p, unsigned char c) {
        *p++ = '\\';
        *p++ = 'x';
        *p++ = hex[c >> 4];
        *p++ = hex[c & 0xF];
        return p;
}

int escape_untrusted(const char *s, bool utf8, char **ret) {
        /* The C names of control characters, by value; 0: none. */
        static const char names[0x20] = { ['\a'] = 'a', ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n',
                                          ['\v'] = 'v', ['\f'] = 'f', ['\r'] = 'r', [0x1b] = 'e' };
        size_t n = strlen(s);
        char *e, *p;

        /* At worst a byte becomes four ("\xNN"); "\u0080" is six for two. */
        if (n > (SIZE_MAX - 1) / 4)
                return -ENOMEM;
        e = malloc(n * 4 + 1);
        if (!e)
                return -ENOMEM;
        for (p = e; n > 0;) {
                unsigned char c = (unsigned char) *s;
                uint32_t cp;
                int l;

                if (c < 0x20 || c == 0x7f || c == '\\') {
                        if (c == '\\' || (c < 0x20 && names[c])) {
                                *p++ = '\\';
                                *p++ = c == '\\' ? '\\' : names[c];
                        } else
                                p = escape_byte(p, c);
                        s++;
                        n--;
                        continue;
                }
                l = utf8_decode(s, n, &cp);
                if (l < 0 || !utf8) {
                        /* Byte by byte: an ill-formed one, or any non-ASCII one for a terminal
                         * that does not read UTF-8 (where 0x80..0x9f may be C1 controls). */
                        if (c < 0x80)
                                *p++ = (char) c;
                        else
                                p = escape_byte(p, c);
                        s++;
                        n--;
                        continue;
                }
                if (cp >= 0x80 && cp <= 0x9f) {
                        memcpy(p, "\\u00", 4);
                        p[4] = hex[cp >> 4];
                        p[5] = hex[cp & 0xF];
                        p += 6;
                } else {
                        memcpy(p, s, (size_t) l);
                        p += l;
                }
                s += l;
                n -= (size_t) l;
        }
        *p = '\0';
        *ret = e;
        return 0;
}

/* The next unit of escaped text: an escape sequence or a character; returns its bytes (at least
 * 1, s not at its end) and its columns in *ret_width. */
static size_t text_unit(const char *s, size_t *ret_width) {
        uint32_t cp;
        int l, w;

        if (s[0] == '\\' && s[1] != '\0') {
                size_t want = s[1] == 'x' ? 4 : s[1] == 'u' ? 6 : 2;
                size_t have = strnlen(s, want);

                *ret_width = have;
                return have;
        }
        l = utf8_decode(s, strnlen(s, 4), &cp);
        if (l < 0) {
                *ret_width = 1;
                return 1;
        }
        /* Where the locale does not know the character (the C locale), one column. */
        w = wcwidth((wchar_t) cp);
        *ret_width = w < 0 ? 1 : (size_t) w;
        return (size_t) l;
}

size_t text_width(const char *s) {
        size_t width = 0, w;

        while (*s) {
                s += text_unit(s, &w);
                width += w;
        }
        return width;
}

size_t text_prefix(const char *s, size_t width, size_t *ret_width) {
        size_t n = 0, used = 0, l, w;

        while (s[n]) {
                l = text_unit(s + n, &w);
                if (used + w > width)
                        break;
                n += l;
                used += w;
        }
        if (ret_width)
                *ret_width = used;
        return n;
}

int format_cell(const char *s, bool utf8, size_t min, size_t max, char **ret) {
        _cleanup_free_ char *e = NULL;
        size_t n, width, pad;
        char *cell;
        int r;

        r = escape_untrusted(s, utf8, &e);
        if (r < 0)
                return r;
        n = text_prefix(e, max, &width);
        pad = min > width ? min - width : 0;
        cell = malloc(n + pad + 1);
        if (!cell)
                return -ENOMEM;
        memcpy(cell, e, n);
        memset(cell + n, ' ', pad);
        cell[n + pad] = '\0';
        *ret = cell;
        return 0;
}

int format_path_cell(const char *s, bool utf8, size_t width, char **ret) {
        static const char dots[] = "...";
        _cleanup_free_ char *e = NULL;
        size_t total, tail = 0, tail_width, budget, prefix, pad, w, n;
        char *cell;
        int r;

        r = escape_untrusted(s, utf8, &e);
        if (r < 0)
                return r;
        total = text_width(e);
        if (total <= width)
                return format_cell(s, utf8, width, width, ret);

        /* The first unit boundary from which the rest fits beside the dots (without them when
         * not even they fit). */
        budget = width > strlen(dots) ? width - strlen(dots) : width;
        tail_width = total;
        while (e[tail] && tail_width > budget) {
                tail += text_unit(e + tail, &w);
                tail_width -= w;
        }
        prefix = budget < width ? strlen(dots) : 0;
        n = strlen(e + tail);
        pad = width > prefix + tail_width ? width - prefix - tail_width : 0;
        cell = malloc(prefix + n + pad + 1);
        if (!cell)
                return -ENOMEM;
        memcpy(cell, dots, prefix);
        memcpy(cell + prefix, e + tail, n);
        memset(cell + prefix + n, ' ', pad);
        cell[prefix + n + pad] = '\0';
        *ret = cell;
        return 0;
}

void csv_field(FILE *f, const char *s, bool terminal, bool utf8) {
        _cleanup_free_ char *escaped = NULL;

        if (!s)
                return;
        if (terminal) {
                if (escape_untrusted(s, utf8, &escaped) < 0) {
                        fputc('?', f);
                        return;
                }
                s = escaped;
        }
        if (!strpbrk(s, ",\"\r\n")) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"')
                        fputc('"', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

bool locale_is_utf8(void) {
        const char *set = nl_langinfo(CODESET);

        return set && (strcmp(set, "UTF-8") == 0 || strcmp(set, "utf8") == 0);
}

const char *format_user(uint64_t uid, char buf[static 32]) {
        struct passwd pw, *result = NULL;
        char scratch[1024];

        if (uid <= UINT32_MAX && getpwuid_r((uid_t) uid, &pw, scratch, sizeof(scratch), &result) == 0 && result &&
            strlen(result->pw_name) < 32)
                snprintf(buf, 32, "%s", result->pw_name);
        else
                snprintf(buf, 32, "%" PRIu64, uid);
        return buf;
}

int format_container_key(const char *runtime, const char *id, const char *name, char **ret) {
        char *key;

        if (!runtime)
                key = strdup("-");
        else if (name && name[0])
                key = strdup(name);
        else if (asprintf(&key, "%s:%.*s", runtime, CONTAINER_KEY_ID_LEN, id ?: "?") < 0)
                key = NULL;
        if (!key)
                return -ENOMEM;
        *ret = key;
        return 0;
}

uint64_t map_total(json_t *map) {
        const char *key;
        uint64_t n = 0;
        json_t *v;

        json_object_foreach (map, key, v)
                if (json_is_integer(v) && json_integer_value(v) > 0)
                        n += (uint64_t) json_integer_value(v);
        return n;
}

const char **map_keys(json_t *map, size_t *ret_n) {
        size_t n = json_object_size(map), k = 0;
        const char **keys, *key;
        json_t *v;

        *ret_n = 0;
        if (n == 0 || !(keys = calloc(n, sizeof(*keys))))
                return NULL;
        json_object_foreach (map, key, v)
                keys[k++] = key;
        *ret_n = k;
        return keys;
}

const char **map_keys_by_count(json_t *map, size_t *ret_n) {
        size_t k;
        const char **keys = map_keys(map, &k);

        *ret_n = k;
        /* Insertion sort: maps hold a few dozen keys at most. */
        for (size_t i = 1; i < k; i++)
                for (size_t j = i; j > 0; j--) {
                        json_int_t a = json_integer_value(json_object_get(map, keys[j - 1]));
                        json_int_t b = json_integer_value(json_object_get(map, keys[j]));

                        if (a > b || (a == b && strcmp(keys[j - 1], keys[j]) <= 0))
                                break;
                        const char *t = keys[j];
                        keys[j] = keys[j - 1];
                        keys[j - 1] = t;
                }
        return keys;
}

void format_busiest(json_t *map, size_t max, double per, char *buf, size_t size) {
        _cleanup_free_ const char **keys = NULL;
        size_t n, used = 0;

        buf[0] = '\0';
        keys = map_keys_by_count(map, &n);
        for (size_t i = 0; i < n && i < max; i++) {
                json_int_t v = json_integer_value(json_object_get(map, keys[i]));
                char num[16];
                int l;

                if (v <= 0)
                        break;
                if (per == 1.0)
                        format_count((uint64_t) v, num);
                else
                        format_rate((double) v / per, num);
                l = snprintf(buf + used, size - used, "%s%s:%s", used ? " " : "", keys[i], num);
                if (l < 0 || (size_t) l >= size - used) {
                        buf[used] = '\0';
                        break;
                }
                used += (size_t) l;
        }
        if (!buf[0])
                snprintf(buf, size, "-");
}
