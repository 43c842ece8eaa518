/* SPDX-License-Identifier: MIT */
#include "format-util.h"

#include <inttypes.h>
#include <langinfo.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "time-util.h"

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

void csv_field(FILE *f, const char *s) {
        if (!s)
                return;
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
